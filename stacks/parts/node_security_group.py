"""The node security group: Slurm and SSH from the cluster's networks, HTTPS out to AWS endpoints."""

from __future__ import annotations

from ipaddress import IPv4Network

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

SLURM_PORTS = ec2.Port.tcp_range(6817, 6819)  # slurmctld, slurmd, slurmdbd
SRUN_PORTS = ec2.Port.tcp_range(60001, 63000)  # SrunPortRange in slurm.conf
HTTPS = ec2.Port.tcp(443)


class NodeSecurityGroup(Construct):
    """Primary-interface security group shared by every cloud node and the head node.

    Inbound: Slurm daemons and srun from the VPC and on-prem networks, SSH from on-prem only.
    Outbound: the same networks, plus HTTPS to S3 (gateway endpoint) and SSM (interface endpoint).
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        vpc: ec2.IVpc,
        vpc_cidr: IPv4Network,
        onprem_cidrs: list[IPv4Network],
    ) -> None:
        super().__init__(scope, id_)
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=vpc,
            description="Cluster nodes: Slurm, srun and SSH from cluster networks",
            allow_all_outbound=False,
        )
        sg = self.security_group
        for cidr in [vpc_cidr, *onprem_cidrs]:
            peer = ec2.Peer.ipv4(str(cidr))
            sg.add_ingress_rule(peer, SLURM_PORTS, f"Slurm daemons from {cidr}")
            sg.add_ingress_rule(peer, SRUN_PORTS, f"srun steps from {cidr}")
            sg.add_egress_rule(peer, SLURM_PORTS, f"Slurm daemons in {cidr}")
            sg.add_egress_rule(peer, SRUN_PORTS, f"srun steps in {cidr}")
        for cidr in onprem_cidrs:
            sg.add_ingress_rule(ec2.Peer.ipv4(str(cidr)), ec2.Port.tcp(22), f"SSH from on-prem {cidr}")
        sg.add_egress_rule(ec2.Peer.any_ipv4(), HTTPS, "HTTPS to S3 and SSM endpoints (and NAT if enabled)")
