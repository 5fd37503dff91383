"""Generate postmortem/knowledge/catalogs/kernel.json: the Linux kernel messages that explain
a dead training process (oops/BUG with the faulting module, MCE/EDAC, PCIe AER, hung tasks,
the OOM killer, global and memcg, user segfaults), as printk formats -> regexes.

Upstream: Linux mainline (https://github.com/torvalds/linux, v6.8 line), the files named per
entry; each format is the printk/pr_* format string of that file.  With a checkout given,
every format's fixed words are checked against its file (the script fails otherwise; entries
in an older release's wording, OLDER_RELEASES, are checked against that tag by hand);
without one, the entries are emitted as listed.

Re-run:  python tools/catalogs/gen_kernel.py [linux-checkout] > postmortem/knowledge/catalogs/kernel.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from printf import TEXT, literal_text, longest_literal, printf_to_regex  # noqa: E402

LINUX = "v6.8"

# (id, family, file, printk format, cause, strength, why)
ENTRIES: tuple[tuple[str, str, str, str, str, str, str], ...] = (
    # OOM killer (mm/oom_kill.c)
    ("k.oom_killed", "oom", "mm/oom_kill.c", "%s: Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB, file-rss:%lukB, shmem-rss:%lukB, UID:%u pgtables:%lukB oom_score_adj:%hd",
     "host_oom", "specific", "the OOM killer killed a process (global or cgroup: the prefix says which)"),
    ("k.oom_killed_old", "oom", "mm/oom_kill.c", "Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB, file-rss:%lukB",
     "host_oom", "specific", "the OOM killer killed a process (older kernels)"),
    ("k.oom_invoked", "oom", "mm/oom_kill.c", "%s invoked oom-killer: gfp_mask=%#x(%pGg), order=%d, oom_score_adj=%hd",
     "host_oom", "specific", "memory ran out and the OOM killer ran"),
    # dump_header's first line in older kernels: v3.x-v4.4 print gfp_mask as bare hex (%pGg came
    # in v4.5).  v4.9-v4.18's ', nodemask=%*pbl' after the flags is read by k.oom_invoked's %pGg.
    ("k.oom_invoked_v3", "oom", "mm/oom_kill.c", "%s invoked oom-killer: gfp_mask=0x%x, order=%d, oom_score_adj=%hd",
     "host_oom", "specific", "memory ran out and the OOM killer ran (Linux v3.x-v4.4 wording)"),
    ("k.oom_constraint", "oom", "mm/oom_kill.c", "oom-kill:constraint=%s,nodemask=%s",
     "host_oom", "specific", "the OOM killer's summary: CONSTRAINT_MEMCG = a cgroup limit, CONSTRAINT_NONE = the whole host"),
    ("k.memcg_oom", "oom", "mm/oom_kill.c", "Memory cgroup out of memory: Killed process %d (%s)",
     "host_oom", "specific", "a container/cgroup memory limit was hit"),
    ("k.out_of_memory", "oom", "mm/oom_kill.c", "Out of memory: Killed process %d (%s)",
     "host_oom", "specific", "the host ran out of memory"),
    ("k.memcg_limit", "oom", "mm/memcontrol.c", "memory: usage %llukB, limit %llukB, failcnt %lu",
     "context", "subsystem", "the cgroup's usage and limit at the time of an OOM"),
    # oops / BUG (arch/x86/mm/fault.c, arch/x86/kernel/dumpstack.c, kernel/panic.c)
    ("k.null_deref", "oops", "arch/x86/mm/fault.c", "BUG: kernel NULL pointer dereference, address: %px",
     "context", "subsystem", "a kernel oops: the RIP line's module says whose code faulted"),
    ("k.page_fault", "oops", "arch/x86/mm/fault.c", "BUG: unable to handle page fault for address: %px",
     "context", "subsystem", "a kernel oops: the RIP line's module says whose code faulted"),
    ("k.oops_rip", "oops", "arch/x86/kernel/dumpstack.c", "RIP: %04x:%pS",
     "context", "subsystem", "where the kernel faulted; a function in an nvidia* module = the GPU driver"),
    ("k.gpf", "oops", "arch/x86/kernel/traps.c", "general protection fault, %s",
     "context", "subsystem", "a kernel general protection fault"),
    ("k.kernel_bug", "oops", "lib/bug.c", "kernel BUG at %s:%u!",
     "context", "subsystem", "a kernel BUG_ON fired: the file says which subsystem"),
    ("k.panic", "oops", "kernel/panic.c", "Kernel panic - not syncing: %s",
     "context", "subsystem", "the kernel panicked: the reason follows"),
    ("k.soft_lockup", "hung", "kernel/watchdog.c", "watchdog: BUG: soft lockup - CPU#%d stuck for %us! [%s:%d]",
     "context", "subsystem", "a CPU stuck in the kernel"),
    # hung tasks (kernel/hung_task.c)
    ("k.hung_task", "hung", "kernel/hung_task.c", "INFO: task %s:%d blocked for more than %ld seconds.",
     "context", "subsystem", "a task stuck in uninterruptible sleep (I/O, a driver call): its stack says where"),
    # user-space faults (arch/x86/mm/fault.c, arch/x86/kernel/traps.c)
    ("k.segfault", "fault", "arch/x86/mm/fault.c", "%s[%d]: segfault at %lx ip %px sp %px error %lx",
     "app_error", "subsystem", "a process segfaulted in user space: the library named says whose code"),
    ("k.trap", "fault", "arch/x86/kernel/traps.c", "%s[%d] trap %s ip:%lx sp:%lx error:%lx",
     "app_error", "subsystem", "a process trapped in user space"),
    # MCE / EDAC / memory failure
    ("k.mce_logged", "mce", "arch/x86/kernel/cpu/mce/core.c", "Machine check events logged",
     "host_memory_error", "subsystem", "machine checks were logged: memory, cache or bus errors"),
    ("k.mce_hw_error", "mce", "arch/x86/kernel/cpu/mce/core.c", "[Hardware Error]: Machine check: %s",
     "host_memory_error", "specific", "a fatal machine check"),
    ("k.memory_failure", "mce", "mm/memory-failure.c", "Memory failure: %#lx: recovery action for %s: %s",
     "host_memory_error", "specific", "a page with an uncorrectable memory error was taken offline"),
    ("k.mce_killing", "mce", "mm/memory-failure.c", "%#lx: Sending SIGBUS to %s:%d due to hardware memory corruption",
     "host_memory_error", "specific", "a process was killed for touching corrupted memory"),
    ("k.edac_ue", "mce", "drivers/edac/edac_mc.c", "EDAC MC%d: %d UE %s on %s",
     "host_memory_error", "specific", "uncorrectable DIMM errors"),
    ("k.edac_ce", "mce", "drivers/edac/edac_mc.c", "EDAC MC%d: %d CE %s on %s",
     "context", "subsystem", "corrected DIMM errors: a trend, not a crash"),
    ("k.cmci_storm", "mce", "arch/x86/kernel/cpu/mce/intel.c", "CMCI storm detected: switching to poll mode",
     "context", "subsystem", "many corrected errors"),
    # PCIe AER (drivers/pci/pcie/aer.c)
    ("k.aer_fatal", "aer", "drivers/pci/pcie/aer.c", "PCIe Bus Error: severity=%s, type=%s, (%s)",
     "pcie_error", "subsystem", "a PCIe error: Uncorrected (Fatal) is a broken link; Corrected is noise"),
    ("k.aer_fatal_old", "aer", "drivers/pci/pcie/aer/aerdrv_errprint.c", "PCIe Bus Error: severity=%s, type=%s, id=%04x(%s)",
     "pcie_error", "subsystem", "a PCIe error (Linux <= 4.x wording): Uncorrected (Fatal) is a broken link"),
    ("k.aer_received", "aer", "drivers/pci/pcie/aer.c", "AER: %s%s error message received from %04x:%02x:%02x.%d",
     "context", "subsystem", "an AER message arrived (its severity decides)"),
    ("k.aer_uncorrected_fatal", "aer", "drivers/pci/pcie/aer.c", "AER: Uncorrected (Fatal) error received: %s",
     "pcie_error", "specific", "an uncorrectable fatal PCIe error"),
    ("k.aer_recovery_failed", "aer", "drivers/pci/pcie/err.c", "AER: device recovery failed",
     "pcie_error", "specific", "the PCIe device could not be recovered"),
    ("k.aer_cant_recover", "aer", "drivers/pci/pcie/err.c", "AER: can't recover (no error_detected callback)",
     "pcie_error", "specific", "the PCIe device could not be recovered"),
    # task limits (kernel/cgroup/pids.c pids_event: printed the first time a group's pids.max
    # refuses a fork/clone; pr_cont_cgroup_path appends the group).  A thread counts as a task.
    # Weak: dmesg is the host's, the group may be another container's; with the job's own
    # EAGAIN from thread/process creation (messages.toml task_create_eagain) it claims.
    # app_error: the job's own configuration (threads x workers x ranks) outgrew its container's
    # limit -- the project's reading where no cause id names the limit.
    ("k.pids_fork_rejected", "limits", "kernel/cgroup/pids.c", "cgroup: fork rejected by pids controller in %s",
     "app_error", "subsystem", "a pids cgroup (docker --pids-limit, systemd TasksMax) refused a new task or thread"),
    # network links (the host's NICs, bonds and bridges): a link going down during the job cuts
    # the traffic its collectives wait on.  Weak alone: the link may be one the job did not use.
    # the more specific text first: the first entry whose text a line carries wins
    ("k.intel_nic_link_down", "netdev", "drivers/net/ethernet/intel/e1000e/netdev.c", "NIC Link is Down",
     "nccl_network", "subsystem", "an Intel/Broadcom NIC driver (e1000e, igb, ixgbe, i40e, bnxt_en print the same) lost its link"),
    ("k.phy_link_down", "netdev", "drivers/net/phy/phy.c", "Link is Down",
     "nccl_network", "subsystem", "phylib phy_print_status: the NIC's PHY lost its link"),
    ("k.mlx5e_link_down", "netdev", "drivers/net/ethernet/mellanox/mlx5/core/en_main.c", "mlx5_core %s %s: Link down",
     "nccl_network", "subsystem", "mlx5e_update_carrier: a ConnectX Ethernet/RoCE port lost its link (netdev_info prints "
     "'<driver> <PCI address> <interface>: Link down')"),
    ("k.bond_slave_down", "netdev", "drivers/net/bonding/bond_main.c", "link status definitely down for interface %s, disabling it",
     "nccl_network", "subsystem", "a bond member lost its link and was taken out of the bond"),
    ("k.bridge_port_disabled", "netdev", "net/bridge/br_stp.c", "port %u(%s) entered disabled state",
     "nccl_network", "subsystem", "br_log_state: a bridge (or switch) port's link went down ('port %u(%s) entered %s state' with br_port_state_names[BR_STATE_DISABLED])"),
    ("k.pcie_link_down", "aer", "drivers/pci/hotplug/pciehp_ctrl.c", "Slot(%s): Link Down",
     "pcie_error", "subsystem", "a PCIe slot lost its link"),
)

# Entries that match one value of a %s: the source's own format, checked against the file
# instead (br_log_state prints br_port_state_names[state]; only "disabled" is a fault).
# Entries in an older kernel's wording: checked against that release's file, not LINUX's.
OLDER_RELEASES = {"k.oom_killed_old": "v4.18", "k.aer_fatal_old": "v4.18", "k.oom_invoked_v3": "v4.4"}

SPECIALIZED = {"k.bridge_port_disabled": "port %u(%s) entered %s state",
               # netdev_info() puts "<driver> <device> <interface>: " before the source's own text
               "k.mlx5e_link_down": "Link down"}

# The module in an oops' RIP line, by prefix -> cause.
MODULE_READINGS = {"nvidia": "driver_bug", "nvidia_uvm": "driver_bug", "nvidia_modeset": "driver_bug",
                   "nvidia_peermem": "driver_bug", "nv_peer_mem": "driver_bug", "mlx5_core": "nccl_network",
                   "mlx5_ib": "nccl_network", "ib_core": "nccl_network"}


def main(argv: list[str]) -> int:
    checkout = Path(argv[1]) if len(argv) > 1 else None
    entries = []
    for eid, family, path, fmt, cause, strength, why in ENTRIES:
        if checkout is not None and eid not in OLDER_RELEASES:
            src = (checkout / path).read_text(errors="replace")
            checked = SPECIALIZED.get(eid, fmt)
            missing = [w for w in literal_text(checked).split("  ") if len(w.strip()) > 3 and w.strip() not in src]
            if missing:
                raise SystemExit(f"{eid}: not in {path}: {missing}")
        entries.append({"id": eid, "family": family, "file": path, "format": fmt, "regex": printf_to_regex(fmt, kernel=True).removeprefix(TEXT),
                        "key": longest_literal(fmt), "cause": cause, "strength": strength, "why": why})
    out = {"catalog": "kernel", "upstream": f"https://github.com/torvalds/linux ({LINUX})", "version": LINUX,
           "verified_in": str(checkout) if checkout else "", "generator": "tools/catalogs/gen_kernel.py",
           "module_readings": MODULE_READINGS, "entries": entries}
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
