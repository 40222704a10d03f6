"""A job's class, by the same rules job_submit.lua applies: comment tag, account, QOS, default class."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpucluster.routing.config import ClassConfig, RoutingConfig

# `--comment=class=<name>` (alone or among other words) names the class outright.
CLASS_TAG = re.compile(r"(?:^|[\s,;])class=([A-Za-z0-9-]+)")


@dataclass(frozen=True)
class Classified:
    """A job's class (None: no class, the job is left as submitted) and what recognised it."""

    job_class: ClassConfig | None
    because: str


def classify(config: RoutingConfig, account: str, qos: str, comment: str) -> Classified:
    """The class of a job with this account, QOS and comment; the tag wins, then account, then QOS."""
    tag = CLASS_TAG.search(comment or "")
    if tag and config.by_name(tag.group(1)) is not None:
        return Classified(config.by_name(tag.group(1)), f"its comment names class={tag.group(1)}")
    for job_class in config.classes:
        if account and account in job_class.accounts:
            return Classified(job_class, f"account {account}")
    for job_class in config.classes:
        if qos and qos in job_class.qos:
            return Classified(job_class, f"QOS {qos}")
    if config.default_class is not None:
        return Classified(config.by_name(config.default_class), "no class recognises it: the default class")
    return Classified(None, "no class recognises it and there is no default class")
