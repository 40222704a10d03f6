#!/usr/bin/env node
// Offline CloudFormation diff with the CDK's own engine (@aws-cdk/cloudformation-diff).
// stdin:  {"<stack name>": {"old": <template or {}>, "new": <template or {}>}, ...}
// stdout: {"<stack name>": {"resources": [...], "permissions_broadened": bool, "iam": [...], "security_groups": [...]}}
'use strict';
const path = require('path');
const { fullDiff } = require(require.resolve('@aws-cdk/cloudformation-diff', {
  paths: [process.env.GPUCLUSTER_NODE_MODULES || process.cwd(), path.join(__dirname, '..', '..')],
}));

function change(diff) {
  if (diff.isAddition) return 'add';
  if (diff.isRemoval) return 'remove';
  return 'update';
}

function resourceRows(diff) {
  const rows = [];
  diff.resources.forEachDifference((logicalId, d) => {
    if (!d.isDifferent) return;
    const props = Object.entries(d.propertyUpdates || {}).map(([name, p]) => ({
      name,
      impact: p.changeImpact || null,
      old: p.oldValue === undefined ? null : p.oldValue,
      new: p.newValue === undefined ? null : p.newValue,
    }));
    const other = Object.entries(d.otherChanges || {}).map(([name, p]) => ({
      name,
      old: p.oldValue === undefined ? null : p.oldValue,
      new: p.newValue === undefined ? null : p.newValue,
    }));
    rows.push({
      logical_id: logicalId,
      type: d.resourceType,
      change: change(d),
      impact: d.changeImpact,
      properties: props,
      other: other,
    });
  });
  return rows;
}

function lines(table) {
  return (table || []).map((row) => row.map(String).join(' | '));
}

function main() {
  const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
  const out = {};
  for (const [stack, pair] of Object.entries(input)) {
    const diff = fullDiff(pair.old || {}, pair.new || {});
    out[stack] = {
      resources: resourceRows(diff),
      permissions_broadened: Boolean(diff.permissionsBroadened),
      iam: diff.iamChanges.hasChanges ? lines(diff.iamChanges.summarizeStatements()) : [],
      security_groups: diff.securityGroupChanges.hasChanges ? lines(diff.securityGroupChanges.summarize()) : [],
    };
  }
  process.stdout.write(JSON.stringify(out));
}

main();
