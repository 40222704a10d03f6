"""Our GPU-cluster rule pack: one small rule per file over synthesized CloudFormation templates."""
