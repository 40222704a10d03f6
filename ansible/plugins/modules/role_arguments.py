#!/usr/bin/python
"""Documentation of the role_arguments action plugin (it runs on the controller; no module code)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: role_arguments
short_description: Check a host's variables against the argument specs of several roles in one task
description:
  - Validates, for each role in I(roles), the host's variables that the role's C(meta/argument_specs.yml)
    names, with the validator Ansible's own role argument validation uses. An option the role's
    C(defaults/main.yml) sets counts as given, as it does inside the role.
  - For a play that imports its roles with C(rolespec_validate=false) so that rolling batches do not pay
    one validation task per role per host; the compute play of C(site.yml) does.
  - Runs on the controller; needs no connection to the host.
version_added: "0.1.0"
options:
  roles:
    description: Roles of this collection, by short or fully qualified name.
    type: list
    elements: str
    required: true
  entry_point:
    description: Entry point of each role's spec.
    type: str
    default: main
author:
  - gpucluster
"""

EXAMPLES = r"""
- name: Check the variables of every role below against its argument spec
  gpucluster.cluster.role_arguments:
    roles: [gpucluster.cluster.slurm_common, gpucluster.cluster.slurm_node]
"""

RETURN = r"""
argument_errors:
  description: One line per problem, each starting with the role's name.
  returned: failure
  type: list
  elements: str
"""
