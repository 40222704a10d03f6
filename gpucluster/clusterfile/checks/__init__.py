"""Cross-field rules over a parsed cluster: each rule is a small named function yielding findings."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from gpucluster.clusterfile.checks import aws as checks_aws
from gpucluster.clusterfile.checks import cluster as checks_cluster
from gpucluster.clusterfile.checks import onprem as checks_onprem
from gpucluster.clusterfile.checks import routing as checks_routing
from gpucluster.clusterfile.checks import software as checks_software
from gpucluster.clusterfile.findings import Finding
from gpucluster.clusterfile.model import Cluster

Rule = Callable[[Cluster], Iterator[Finding]]

RULES: tuple[Rule, ...] = (
    checks_cluster.has_some_capacity,
    checks_onprem.profile_gpu_model_known,
    checks_onprem.rack_profile_declared,
    checks_onprem.rack_declares_nodes,
    checks_onprem.addresses_in_management_cidr,
    checks_onprem.subnet_manager_declared,
    checks_onprem.ipoib_addresses_declared,
    checks_aws.availability_zone_in_region,
    checks_aws.instance_types_known,
    checks_aws.fallback_types_match,
    checks_aws.min_count_not_above_max,
    checks_aws.efa_needs_cluster_placement_group,
    checks_aws.capacity_block_without_placement_group,
    checks_aws.reservation_fits_market,
    checks_aws.efa_layout_fits_every_type,
    checks_aws.vpc_fits_its_subnets,
    checks_aws.head_node_inside_vpc,
    checks_aws.onprem_cidrs_do_not_overlap_vpc,
    checks_aws.onprem_controller_is_reachable,
    checks_aws.spot_has_checkpoint_bucket,
    checks_aws.one_image_source,
    checks_aws.image_fits_root_volumes,
    checks_cluster.node_group_names_unique,
    checks_cluster.host_names_unique,
    checks_cluster.host_addresses_unique,
    checks_cluster.controller_is_declared_host,
    checks_cluster.accounting_host_declared,
    checks_cluster.partition_names_unique,
    checks_cluster.partitions_name_known_groups,
    checks_cluster.at_most_one_default_partition,
    checks_cluster.economics_prices_name_known_types,
    checks_software.upstream_release_can_build,
    checks_routing.class_names_unique,
    checks_routing.selectors_unambiguous,
    checks_routing.route_partitions_fit,
    checks_routing.budget_share_has_budget,
)


def run_checks(cluster: Cluster) -> list[Finding]:
    """Every finding of every rule, errors and warnings together, in rule order."""
    return [finding for rule in RULES for finding in rule(cluster)]
