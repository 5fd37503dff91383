"""From decoded notes and memory to the model: the core's facts, its signal event and
every thread's stack.  The questions (which fault, which frames, which names) are
answered by fault.py, unwind.py and symbols.py; this module only assembles the answers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from postmortem.core.fault import Fault, crashing_thread, find_fault
from postmortem.core.notes import Mapping, Notes
from postmortem.core.stream import Memory
from postmortem.core.symbols import MappingIndex, Symbolizer, build_ids_of, mapping_offset_of
from postmortem.core.tables import AT_ENTRY, AT_EXECFN, Arch, describe_size, si_code_name, signal_name
from postmortem.core.unwind import Unwinder
from postmortem.model import Event, Fact, Severity, Stack

if TYPE_CHECKING:
    from postmortem.core.reader import CoreReader


@dataclass(frozen=True, slots=True)
class CoreResult:
    """What one core says, as model objects, plus what could not be read."""

    facts: tuple[Fact, ...] = ()
    stacks: tuple[Stack, ...] = ()
    events: tuple[Event, ...] = ()
    problems: tuple[str, ...] = ()
    truncated: bool = False


class Analysis:
    """From decoded notes and memory to facts, the signal event and stacks."""

    def __init__(self, reader: "CoreReader", elf: Any, arch: Arch | None, notes: Notes,
                 memory: Memory) -> None:
        self.reader = reader
        self.elf = elf
        self.arch = arch
        self.notes = notes
        self.memory = memory
        self.maps = MappingIndex(notes.mappings)
        self.build_ids = build_ids_of(notes.mappings, memory)
        symbols = Symbolizer(reader.search_dirs, self.build_ids, reader.problem)
        self.unwinder = Unwinder(arch, memory, self.maps, symbols, reader.problem)

    def result(self) -> CoreResult:
        fault = find_fault(self.notes, self.memory, self.arch, self.reader.problem)
        events: list[Event] = []
        if fault is not None:
            events.append(self._signal_event(fault))
        self._process_facts()
        if fault is not None:
            self._fault_facts(fault)
        stacks = tuple(self.unwinder.stacks(self.notes, fault, self.reader.ref))
        r = self.reader
        r.facts.append(Fact("core.truncated", r.truncated, r.ref(0), text=str(r.truncated)))
        return CoreResult(tuple(r.facts), stacks, tuple(events), tuple(r.problems), r.truncated)

    def _signal_event(self, fault: Fault) -> Event:
        proc = self.notes.process
        thread = crashing_thread(self.notes)
        signal = signal_name(fault.signo)
        code_name = si_code_name(fault.signo, fault.code)
        mapping = self.maps.find(fault.addr) if fault.addr is not None else None
        mapping_offset = mapping_offset_of(mapping, fault.addr)
        data = {
            "signo": fault.signo, "signal": signal, "si_code": fault.code,
            "si_code_name": code_name, "addr": fault.addr, "how": fault.how,
            "mapping": mapping.path if mapping else None, "mapping_offset": mapping_offset,
            "pid": proc.pid if proc else None, "tid": thread.tid if thread else None,
            "comm": proc.comm if proc else None,
        }
        if fault.how == "sigframe":
            data.update(reraised_si_code_name=si_code_name(fault.signo, fault.reraised_code),
                        si_code_inferred=fault.code_inferred, trapno=fault.trapno,
                        err=fault.err, fault_pc=fault.pc)
        return Event(kind="core.signal", text=self._describe_fault(fault, mapping),
                     ref=self.reader.ref(self._signal_note_offset(fault)),
                     severity=Severity.FATAL, pid=data["pid"], tid=data["tid"], data=data)

    def _signal_note_offset(self, fault: Fault) -> int:
        if self.notes.siginfos:
            return self.notes.siginfos[0].note_offset
        return fault.ref_offset

    def _describe_fault(self, fault: Fault, mapping: Mapping | None) -> str:
        code = si_code_name(fault.signo, fault.code)
        text = signal_name(fault.signo) + (f" ({code})" if code else "")
        if fault.addr is not None:
            text += f" at {fault.addr:#x}"
            if mapping is not None:
                offset = mapping_offset_of(mapping, fault.addr)
                text += f" = {describe_size(offset)} into {mapping.path}"
            elif self.memory.is_mapped(fault.addr):
                text += " in an anonymous mapping"
            else:
                text += " (not mapped)"
        if fault.how == "sigframe":
            raised = si_code_name(fault.signo, fault.reraised_code)
            text += f"; recovered from the signal frame, a handler re-raised it ({raised})"
        elif self.notes.siginfos and self.notes.siginfos[0].sender_pid is not None:
            text += f" sent by pid {self.notes.siginfos[0].sender_pid}"
        return text

    # -- facts

    def _fact(self, name: str, value: Any, offset: int | None, unit: str = "",
              text: str = "") -> None:
        self.reader.facts.append(Fact(name, value, self.reader.ref(offset), unit=unit,
                                      text=text or str(value)))

    def _process_facts(self) -> None:
        proc, notes = self.notes.process, self.notes
        self._fact("core.arch", self.arch.name if self.arch else str(self.elf["e_machine"]), 18)
        if proc is not None:
            self._fact("core.pid", proc.pid, proc.note_offset)
            self._fact("core.ppid", proc.ppid, proc.note_offset)
            self._fact("core.uid", proc.uid, proc.note_offset)
            self._fact("core.comm", proc.comm, proc.note_offset)
            self._fact("core.cmdline", proc.cmdline, proc.note_offset)
        if notes.threads:
            self._fact("core.threads", len(notes.threads), notes.threads[0].note_offset)
            self._fact("core.tid", notes.threads[0].tid, notes.threads[0].note_offset)
        self._exe_facts()
        if notes.mappings:
            table = tuple((m.start, m.end, m.file_offset, m.path) for m in notes.mappings)
            self._fact("core.mappings", table, notes.file_note_offset,
                       text=f"{len(table)} file-backed mappings")
        if self.build_ids:
            self._fact("core.build_ids", dict(self.build_ids), notes.file_note_offset,
                       text=f"{len(self.build_ids)} build-ids")

    def _exe_facts(self) -> None:
        auxv = self.notes.auxv
        execfn = None
        if AT_EXECFN in auxv:
            execfn = self.memory.read_cstring(auxv[AT_EXECFN])
            if execfn is not None:
                self._fact("core.execfn", execfn, self.memory.file_offset(auxv[AT_EXECFN]))
        # The mapping that holds the entry point is the executable, by its full path.
        entry = self.maps.find(auxv[AT_ENTRY]) if AT_ENTRY in auxv else None
        if entry is not None:
            self._fact("core.exe", entry.path, self.notes.file_note_offset)
        elif execfn is not None:
            self._fact("core.exe", execfn, self.memory.file_offset(auxv[AT_EXECFN]))

    def _fault_facts(self, fault: Fault) -> None:
        where = fault.ref_offset
        signal = signal_name(fault.signo)
        self._fact("core.signal", signal, where, text=f"{signal} ({fault.signo})")
        code_name = si_code_name(fault.signo, fault.code)
        if code_name is not None:
            self._fact("core.si_code", code_name, where, text=f"{code_name} ({fault.code})")
        self._fact("core.fault_how", fault.how, where)
        if fault.addr is None:
            return
        self._fact("core.fault_addr", fault.addr, where, text=f"{fault.addr:#x}")
        mapping = self.maps.find(fault.addr)
        if mapping is not None:
            offset = mapping_offset_of(mapping, fault.addr)
            self._fact("core.fault_mapping", mapping.path, self.notes.file_note_offset)
            self._fact("core.fault_mapping_offset", offset, self.notes.file_note_offset,
                       unit="bytes", text=describe_size(offset))
