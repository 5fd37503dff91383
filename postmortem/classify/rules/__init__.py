"""The rules, in one ordered list (order only decides the trace's order: resolving root
versus symptom happens in postmortem/classify/__init__.py).  One module per family:
knowledge-driven (messages, Xids), config, comms, hardware."""
from __future__ import annotations

from postmortem.classify.rules.app import AppError, CollectiveInLoaderWorker, RequestBeyondHost
from postmortem.classify.rules.base import Rule, died_of, finding
from postmortem.classify.rules.catalog import CatalogReadings
from postmortem.classify.rules.comms import (GlooHostOnlyRemote, HostOnlySocketInterface, KernelRdmaFault, NcclStoppedDuringInit, NcclVersionMismatch, QuietPcieTopology,
                                             RefusedWhilePeerWaited, SilentCollectiveHang, StoreServerWaited)
from postmortem.classify.rules.config import (CgroupOomKills, CollectiveTimeout, CudaBuildNewerThanDriver, EnomemUnderMemlock, HighHostMemoryThenDeath,
                                              KilledWithoutReason, MeasuredLimit, MemoryLimitSet, OomReportCutShort, PidsLimitRefused,
                                              ShmFullInPython, ShmNcclSegmentsLeft, ShmSmallBesideFailure, SigbusContext, StorePortTaken, ForkEnomem,
                                              TimeoutRecordsDisagree)
from postmortem.classify.rules.hang import CgroupHeldBack, FlightRecorderHang, OwnWatchdogDump, StacksAtTimeout
from postmortem.classify.rules.held import HeldWait
from postmortem.classify.rules.hardware import GpuHealth, ThermalBeforeBusLoss
from postmortem.classify.rules.interfaces import (FirewallDiscards, HostOffNetwork, InterfaceFaults, PathDiscards,
                                                  SegmentsExceedReceiverMtu, TcpConnectionLosses)
from postmortem.classify.rules.known_messages import KnownMessages, XidCatalog
from postmortem.classify.rules.versions import NcclFixedInLaterRelease
from postmortem.classify.rules.peer_path import (IpsecPolicyWithoutSa, LinkDownDuringJob, NameResolvesApart, PeerAddressElsewhere,
                                                 PeerAnswersPing, PeerProbeLost, PeerUnresolved, PeerUnroutable,
                                                 SourceRewrittenOnPath, StoreAddressOctal)

RULES: tuple[Rule, ...] = (
    KnownMessages(),
    XidCatalog(),
    CatalogReadings(),
    SigbusContext(),
    ShmFullInPython(),
    ShmSmallBesideFailure(),
    ShmNcclSegmentsLeft(),
    NcclVersionMismatch(),
    NcclFixedInLaterRelease(),
    CollectiveTimeout(),
    TimeoutRecordsDisagree(),
    SilentCollectiveHang(),
    KilledWithoutReason(),
    GpuHealth(),
    ThermalBeforeBusLoss(),
    QuietPcieTopology(),
    HighHostMemoryThenDeath(),
    MemoryLimitSet(),
    RequestBeyondHost(),
    CgroupOomKills(),
    OomReportCutShort(),
    MeasuredLimit(),
    PidsLimitRefused(),
    EnomemUnderMemlock(),
    CudaBuildNewerThanDriver(),
    NcclStoppedDuringInit(),
    FlightRecorderHang(),
    StacksAtTimeout(),
    CollectiveInLoaderWorker(),
    HeldWait(),
    OwnWatchdogDump(),
    CgroupHeldBack(),
    KernelRdmaFault(),
    HostOnlySocketInterface(),
    GlooHostOnlyRemote(),
    RefusedWhilePeerWaited(),
    StoreServerWaited(),
    StorePortTaken(),
    ForkEnomem(),
    InterfaceFaults(),
    TcpConnectionLosses(),
    SegmentsExceedReceiverMtu(),
    PathDiscards(),
    FirewallDiscards(),
    HostOffNetwork(),
    PeerUnresolved(),
    PeerUnroutable(),
    PeerProbeLost(),
    PeerAnswersPing(),
    NameResolvesApart(),
    StoreAddressOctal(),
    PeerAddressElsewhere(),
    IpsecPolicyWithoutSa(),
    SourceRewrittenOnPath(),
    LinkDownDuringJob(),
    AppError(),
)

__all__ = ["RULES", "Rule", "AppError", "died_of", "finding", "KnownMessages", "XidCatalog", "SigbusContext",
           "NcclVersionMismatch", "CollectiveTimeout", "SilentCollectiveHang", "HighHostMemoryThenDeath",
           "QuietPcieTopology", "KilledWithoutReason", "GpuHealth", "CudaBuildNewerThanDriver",
           "NcclStoppedDuringInit"]
