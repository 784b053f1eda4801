"""Chip-to-chip topology: which link tier joins two chips, and what each tier offers.

A system is a set of chips joined either through switches in tiers (a Trn3 UltraServer:
in-server, in-rack across servers, across racks; NeuronSwitch-v1 makes every pair of
chips one tier apart) or as a 2D torus of direct links (trn2.48xlarge). Collectives ask
the topology which tier each pair uses and how a group splits into servers and racks.
"""

from simcore.topology.topology import Tier, Topology, topology_of

__all__ = ["Tier", "Topology", "topology_of"]
