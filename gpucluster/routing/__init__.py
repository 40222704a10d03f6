"""Hybrid routing: job classes, job_submit.lua, the burst controller, explain and replay."""
