"""The controller publishes its munge key to the SSM SecureString the cloud nodes read; no manual step."""

from __future__ import annotations

import base64

from gpucluster.names import munge_key_alias, munge_key_parameter
from gpucluster.power.munge_key import publish
from tests.power.conftest import Aws


def test_the_key_is_written_once_as_a_secure_string_and_rewritten_only_when_it_changes(aws: Aws) -> None:
    name = munge_key_parameter(aws.cfg.cluster)
    key = bytes(range(256)) * 4
    assert publish(aws.ssm, name, key, None) is True
    stored = aws.ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]
    assert stored["Type"] == "SecureString" and base64.b64decode(stored["Value"]) == key
    assert publish(aws.ssm, name, key, None) is False  # idempotent: the role reports no change
    assert aws.ssm.get_parameter(Name=name)["Parameter"]["Version"] == 1
    assert publish(aws.ssm, name, key[::-1], None) is True  # a new key replaces the old
    assert aws.ssm.get_parameter(Name=name)["Parameter"]["Version"] == 2


def test_a_parameter_under_another_kms_key_is_rewritten_under_the_stack_key(aws: Aws) -> None:
    name = munge_key_parameter(aws.cfg.cluster)
    key = b"k" * 1024
    assert publish(aws.ssm, name, key, None) is True  # e.g. published before the stack made its key
    alias = munge_key_alias(aws.cfg.cluster)
    assert publish(aws.ssm, name, key, alias) is True  # same value, but nodes can only decrypt with ours
    history = aws.ssm.get_parameter_history(Name=name)["Parameters"]
    assert [entry.get("KeyId") for entry in history] == ["alias/aws/ssm", alias]
    assert publish(aws.ssm, name, key, alias) is False
