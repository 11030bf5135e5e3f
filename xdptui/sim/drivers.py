"""Driver profiles: what each NIC driver supports and how it lays out its XDP TX rings.

Facts come from the drivers named in each profile's docstring line; what the reference marks
UNVERIFIED is marked so here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from xdptui.model.errors import Errno, KernelError

TxRingRule = Literal["ixgbe", "per_queue_pair", "ice", "mlx5", "none"]


@dataclass(frozen=True)
class DriverProfile:
    name: str
    native_xdp: bool  # has ndo_bpf
    ndo_xdp_xmit: bool  # has ndo_xdp_xmit
    ndo_xmit_needs_prog: bool  # advertises NETDEV_XDP_ACT_NDO_XMIT only while a program is attached
    rx_ring_default: int
    rx_ring_max: int
    tx_ring_default: int
    reta_size: int
    max_queues: int
    rss_queues_max: int  # RETA spreads over at most this many queues
    tx_ring_rule: TxRingRule
    max_xdp_tx_rings: int
    reset_on_attach: bool  # none<->some re-allocates rings (link blip, frames in rings lost)
    reset_ns: int
    rx_pps_max: float | None  # the NIC's own receive limit (DMA/PCIe), None = line rate
    tx_pps_max: float | None  # XDP TX descriptor processing limit
    tx_dma_weight: float  # one transmitted frame costs this many received ones of rx_pps_max
    itr_ns: int  # interrupt moderation (rx-usecs): at most one RX interrupt per itr_ns per queue
    note: str = ""

    def xdp_tx_layout(self, nr_cpus: int, queues: int) -> tuple[int, bool]:
        """(number of XDP TX rings, locking) when a program is attached.

        ixgbe: ``ixgbe_lib.c: ixgbe_xdp_queues`` = min(IXGBE_MAX_XDP_QS=64, nr_cpu_ids); more CPUs
        than rings turns on ``ixgbe_xdp_locking_key`` (``ixgbe_xdp_setup``).
        ice: ``ice_main.c: ice_vsi_determine_xdp_res`` = min(the PF's free TX queues,
        num_possible_cpus()); fewer rings than CPUs turns on ``ice_xdp_locking_key``. The PF's
        free TX queues are its ``max_xdp_tx_rings`` less the ``queues`` the LAN side holds.
        mlx5: two XDPSQs per channel (en_main.c ``mlx5e_open_queues``): the RQ's own
        ``rq_xdpsq`` for XDP_TX and the channel's ``xdpsq`` for ``mlx5e_xdp_xmit``; channel
        c's are rings 2c and 2c + 1."""
        if self.tx_ring_rule == "ixgbe":
            rings = min(self.max_xdp_tx_rings, nr_cpus)
            return rings, nr_cpus > rings
        if self.tx_ring_rule == "ice":
            rings = min(self.free_txqs(queues), nr_cpus)
            return rings, rings < nr_cpus
        if self.tx_ring_rule == "per_queue_pair":
            return queues, False
        if self.tx_ring_rule == "mlx5":
            return 2 * queues, False
        return 0, False

    def free_txqs(self, queues: int) -> int:
        """ice: ``ice_get_avail_txq_count`` -- the PF's TX queues the LAN queues left free."""
        return max(0, self.max_xdp_tx_rings - queues)

    def check_attach(self, nr_cpus: int, queues: int = 0) -> None:
        """Driver-level refusals of a native attach: ``ixgbe_xdp_setup`` (more than 2 * 64 CPUs
        cannot be mapped onto 64 rings) and ``ice_vsi_determine_xdp_res`` (fewer free TX queues
        than half the CPUs, "Not enough Tx resources for XDP") answer -ENOMEM."""
        if self.tx_ring_rule == "ixgbe" and nr_cpus > 2 * self.max_xdp_tx_rings:
            raise KernelError(Errno.ENOMEM, "")
        if self.tx_ring_rule == "ice" and self.free_txqs(queues) < nr_cpus // 2:
            raise KernelError(Errno.ENOMEM, "Not enough Tx resources for XDP")

    def ring_for_cpu(self, cpu: int, rings: int, locking: bool) -> int | None:
        """The XDP TX ring ``ndo_xdp_xmit`` uses on a CPU (ixgbe: XDP_TX too), None if none.

        ixgbe: ``ixgbe_determine_xdp_q_idx`` (cpu, or cpu % 64 under the locking key);
        i40e: ``i40e_xdp_xmit`` uses ``xdp_rings[smp_processor_id()]`` and answers -ENXIO past
        the last queue pair; mlx5: ``mlx5e_xdp_xmit`` uses channel ``smp_processor_id()``'s
        XDPSQ, -ENXIO at or past the channel count; ice: ``ice_xdp_xmit`` takes
        ``xdp_rings[cpu % num_xdp_txq]`` under its ``tx_lock`` with ``ice_xdp_locking_key``,
        else ``xdp_rings[cpu]`` (-ENXIO past the last)."""
        if rings == 0:
            return None
        if self.tx_ring_rule == "mlx5":
            return 2 * cpu + 1 if cpu < rings // 2 else None
        if locking:
            return cpu % rings
        return cpu if cpu < rings else None

    def ring_for_queue(self, queue: int, rings: int, locking: bool, queues: int) -> int | None:
        """The XDP TX ring XDP_TX uses for frames of RX queue ``queue``, None where the driver
        picks by CPU (ixgbe: ``ixgbe_determine_xdp_ring``).

        i40e: the ring of the queue pair; mlx5: the RQ's own ``rq->xdpsq`` (``rq_xdpsq`` of
        the channel, not the ``xdpsq`` ``mlx5e_xdp_xmit`` uses).
        ice: ``ice_map_xdp_rings`` -> ``ice_xdp_ring_from_qid``: under ``ice_xdp_locking_key``
        ``xdp_rings[q % num_xdp_txq]``; otherwise the first XDP ring on the queue's interrupt
        vector. The rings are dealt to the ``queues`` vectors in contiguous runs of
        DIV_ROUND_UP(left, vectors left), each pushed onto the head of the vector's TX ring
        list, so the first one found is the last of its run."""
        if rings == 0 or self.tx_ring_rule in ("ixgbe", "none"):
            return None
        if self.tx_ring_rule == "per_queue_pair":
            return queue % rings
        if self.tx_ring_rule == "mlx5":
            return 2 * queue
        if locking:
            return queue % rings
        left = rings
        for vector in range(queues):
            per_v = -(-left // (queues - vector))
            base = rings - left
            if vector == queue:
                return base + per_v - 1 if per_v else None
            left -= per_v
        return None


IXGBE = DriverProfile(
    name="ixgbe",
    native_xdp=True,
    ndo_xdp_xmit=True,
    ndo_xmit_needs_prog=True,  # ixgbe_xdp_setup: xdp_features_set_redirect_target on attach
    rx_ring_default=512,  # IXGBE_DEFAULT_RXD
    rx_ring_max=4096,
    tx_ring_default=512,  # IXGBE_DEFAULT_TXD; XDP rings take the TX ring size
    reta_size=512,  # X550: 512 RETA entries (ixgbe_rss_indir_tbl_entries; 82599: 128)
    max_queues=64,  # IXGBE_MAX_FDIR_INDICES + 1
    rss_queues_max=63,  # IXGBE_MAX_RSS_INDICES_X550 (82599: 16; UNVERIFIED)
    tx_ring_rule="ixgbe",
    max_xdp_tx_rings=64,  # IXGBE_MAX_XDP_QS
    reset_on_attach=True,  # ixgbe_xdp_setup: need_reset -> ixgbe_setup_tc
    reset_ns=2_000_000,  # UNVERIFIED: the link bounce of a ring re-allocation, order of ms
    rx_pps_max=None,
    tx_pps_max=None,
    tx_dma_weight=1.0,
    itr_ns=50_000,  # IXGBE_20K_ITR: 20k interrupts/s (dynamic ITR not modelled)
    note="X550-class 10G port",
)

I40E = DriverProfile(
    name="i40e",
    native_xdp=True,
    ndo_xdp_xmit=True,
    ndo_xmit_needs_prog=True,  # UNVERIFIED for i40e (verified for ixgbe)
    rx_ring_default=512,
    rx_ring_max=8160,
    tx_ring_default=512,
    reta_size=512,  # UNVERIFIED
    max_queues=64,  # UNVERIFIED
    rss_queues_max=64,
    tx_ring_rule="per_queue_pair",  # one XDP ring per queue pair
    max_xdp_tx_rings=64,
    reset_on_attach=True,  # UNVERIFIED details (i40e_xdp_setup: i40e_prep_for_reset)
    reset_ns=2_000_000,
    rx_pps_max=None,
    tx_pps_max=None,
    tx_dma_weight=1.0,
    itr_ns=50_000,  # I40E_ITR_RX_DEF = I40E_ITR_20K (dynamic ITR not modelled)
    note="XL710-class 40G port",
)

ICE = DriverProfile(
    name="ice",
    native_xdp=True,
    ndo_xdp_xmit=True,
    ndo_xmit_needs_prog=True,  # ice_xdp_setup_prog: xdp_features_set_redirect_target on attach
    rx_ring_default=2048,  # ICE_DFLT_NUM_RX_DESC
    rx_ring_max=8160,
    tx_ring_default=256,  # ICE_DFLT_NUM_TX_DESC
    reta_size=512,  # VSI LUT (UNVERIFIED; the PF LUT is 2048)
    max_queues=256,
    rss_queues_max=256,
    tx_ring_rule="ice",
    # the PF's TX queues (ice_get_avail_txq_count counts the free ones); UNVERIFIED count
    max_xdp_tx_rings=256,
    reset_on_attach=True,  # UNVERIFIED details
    reset_ns=2_000_000,
    # Fitted to the bond seed's E810 rows: XDP_DROP with RSS tops out at 116.5 Mpps on 16 CPUs
    # that could do far more, and XDP_TX with RSS receives 25.3 Mpps while sending 24.2 Mpps.
    rx_pps_max=116.5e6,
    tx_pps_max=24.2e6,
    tx_dma_weight=(116.5 - 25.3) / 24.2,
    itr_ns=50_000,  # ICE_DFLT_RX_ITR = ICE_ITR_20K, 50 us (dynamic ITR not modelled)
    note="E810-class 100G port",
)

MLX5 = DriverProfile(
    name="mlx5",
    native_xdp=True,
    ndo_xdp_xmit=True,
    # mlx5e_set_xdp_feature: NDO_XMIT only while a program is attached since v6.19
    # (d4aa0cc9bd31, "Support XDP target xmit with dummy program"); v6.3-v6.18 always.
    ndo_xmit_needs_prog=True,
    rx_ring_default=1024,
    rx_ring_max=8192,
    tx_ring_default=1024,
    reta_size=256,  # UNVERIFIED
    max_queues=64,
    rss_queues_max=64,
    tx_ring_rule="mlx5",  # two XDPSQs per channel; mlx5e_xdp_xmit: -ENXIO past the last
    max_xdp_tx_rings=64,
    reset_on_attach=True,  # UNVERIFIED: mlx5e_xdp_set reopens channels on none<->some
    reset_ns=2_000_000,
    rx_pps_max=None,
    tx_pps_max=None,
    tx_dma_weight=1.0,
    # MLX5E_PARAMS_DEFAULT_RX_CQ_MODERATION_USEC 16 us (or 32 CQEs), modelled as a throttle
    itr_ns=16_000,
    note="ConnectX-class port (UNVERIFIED details)",
)

GENERIC = DriverProfile(
    name="generic",
    native_xdp=False,
    ndo_xdp_xmit=False,
    ndo_xmit_needs_prog=False,
    rx_ring_default=256,
    rx_ring_max=4096,
    tx_ring_default=256,
    reta_size=128,
    max_queues=64,
    rss_queues_max=64,
    tx_ring_rule="none",
    max_xdp_tx_rings=0,
    reset_on_attach=False,
    reset_ns=0,
    rx_pps_max=None,
    tx_pps_max=None,
    tx_dma_weight=1.0,
    itr_ns=50_000,  # UNVERIFIED: a typical 20k interrupts/s
    note="a driver without ndo_bpf or ndo_xdp_xmit: generic XDP only",
)

DRIVERS: dict[str, DriverProfile] = {d.name: d for d in (IXGBE, I40E, ICE, MLX5, GENERIC)}
