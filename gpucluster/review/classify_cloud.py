"""Classify CloudFormation changes: stateful resources, instances and capacity, security."""

from __future__ import annotations

import json
from typing import Any

from gpucluster.review.cfn import ResourceChange, StackDiff
from gpucluster.review.findings import Finding

STATEFUL = {
    "AWS::S3::Bucket",
    "AWS::KMS::Key",
    "AWS::Logs::LogGroup",
    "AWS::EFS::FileSystem",
    "AWS::RDS::DBInstance",
}
INSTANCES = {"AWS::EC2::Instance"}
# The power programs launch every cloud node from its group's launch template when Slurm resumes it:
# a changed template changes nothing that runs (stacks/parts/gpu_group.py).
LAUNCH_TEMPLATE = "AWS::EC2::LaunchTemplate"
NEW_INSTANCES = "new instances from now on (running nodes keep theirs until they power down)"
DESTRUCTIVE = {"WILL_REPLACE", "MAY_REPLACE", "WILL_DESTROY", "WILL_ORPHAN"}
# A new or changed recipe or image builds a new AMI (stacks/image_stack.py).
IMAGE_BUILD = {"AWS::ImageBuilder::ImageRecipe", "AWS::ImageBuilder::Image"}
NEW_AMI = "new AMI: rolling replacement of cloud nodes as they power down"


def classify_stacks(diffs: list[StackDiff]) -> list[Finding]:
    """Findings for every resource change and every security-relevant change of the stacks."""
    findings: list[Finding] = []
    for diff in diffs:
        for change in diff.resources:
            findings += classify_resource(change)
        findings += _new_ami(diff)
        findings += _broadened(diff)
    return findings


def classify_resource(change: ResourceChange) -> list[Finding]:
    """The findings of one resource change (a resource can be both data-loss and security)."""
    where = f"`{change.stack}/{change.logical_id}` ({change.type})"
    out = _stateful(change, where) + _security(change, where)
    if change.type == LAUNCH_TEMPLATE:
        verb = {"add": "created", "remove": "removed"}.get(change.change, "changed")
        return [*out, Finding("in-place", f"{where} {verb}: {NEW_INSTANCES}", _props(change))]
    if change.type in INSTANCES:
        out += _instances(change, where)
    if not any(f.kind in ("data-loss", "replace") for f in out):
        verb = {"add": "created", "remove": "removed"}.get(change.change, _update_verb(change))
        out.append(Finding("in-place", f"{where} {verb}", _props(change)))
    return out


def _update_verb(change: ResourceChange) -> str:
    return "replaced (stateless)" if change.impact in DESTRUCTIVE else "updated in place"


def _stateful(change: ResourceChange, where: str) -> list[Finding]:
    if change.type not in STATEFUL or change.change == "add":
        return []
    if change.change == "remove" or change.impact in DESTRUCTIVE:
        what = "removed from the stack" if change.change == "remove" else "replaced"
        return [Finding("data-loss", f"{where} {what} ({change.impact})", _props(change))]
    if change.old.get("DeletionPolicy") == "Retain" and change.new.get("DeletionPolicy") != "Retain":
        return [Finding("data-loss", f"{where}: RETAIN removed; a stack delete would delete it")]
    return []


def _instances(change: ResourceChange, where: str) -> list[Finding]:
    if change.change == "remove" or change.impact in DESTRUCTIVE:
        return [Finding("replace", f"{where} {change.change} ({change.impact}): the instance is replaced")]
    return []


def _new_ami(diff: StackDiff) -> list[Finding]:
    """One finding per stack whose changes give cloud nodes another image (recipe, image or ImageId).

    Kind "reboot": like a driver change on a rack, nothing running is replaced; each cloud node comes
    back on the new AMI the next time Slurm powers it up.
    """
    causes = [
        f"`{c.logical_id}` ({c.type}) {c.change}"
        for c in diff.resources
        if (c.type in IMAGE_BUILD and c.change != "remove") or _image_id_changed(c)
    ]
    return [Finding("reboot", f"`{diff.stack}`: {NEW_AMI}", causes)] if causes else []


def _image_id_changed(change: ResourceChange) -> bool:
    """A launch template launching another AMI: an explicit aws.ami_id or another AMI parameter."""
    if change.type != "AWS::EC2::LaunchTemplate" or change.change != "update":
        return False
    old, new = (
        r.get("Properties", {}).get("LaunchTemplateData", {}).get("ImageId") for r in (change.old, change.new)
    )
    return bool(old != new)


def _security(change: ResourceChange, where: str) -> list[Finding]:
    old, new = json.dumps(change.old), json.dumps(change.new)
    out: list[Finding] = []
    if change.change != "add" and "aws:SecureTransport" in old and "aws:SecureTransport" not in new:
        out.append(Finding("security", f"{where}: TLS-only (aws:SecureTransport) statement removed"))
    if (
        change.type == "AWS::S3::Bucket"
        and change.change != "add"
        and "aws:kms" in old
        and "aws:kms" not in new
    ):
        out.append(Finding("security", f"{where}: KMS encryption removed (now {_sse(change.new)})"))
    if change.change == "update" and '"Encrypted": true' in old and '"Encrypted": true' not in new:
        out.append(Finding("security", f"{where}: volume encryption removed"))
    return out


def _sse(resource: dict[str, Any]) -> str:
    text = json.dumps(resource)
    return "SSE-S3 (AES256)" if "AES256" in text else "no server-side encryption"


def _broadened(diff: StackDiff) -> list[Finding]:
    if not diff.permissions_broadened:
        return []
    added = [line for line in diff.iam if line.startswith("+")]
    added += [line for line in diff.security_groups if line.startswith("+") and _opens(line)]
    if not added:
        return []
    return [
        Finding("security", f"`{diff.stack}`: IAM permissions or security-group ingress broadened", added)
    ]


def _opens(line: str) -> bool:
    """An added ingress rule whose peer is not the group itself (self-references open nothing new)."""
    cells = [c.strip() for c in line.split("|")]
    return len(cells) >= 5 and cells[2] == "In" and cells[4] != cells[1]


def _props(change: ResourceChange) -> list[str]:
    return [f"{p.name}: {p.impact or 'update'}" for p in change.properties]
