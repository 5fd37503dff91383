"""Every thread's stack from a core: the pc, then callers by frame-pointer walk, and for a
crashing thread whose fault was recovered from a signal frame, gdb's view of it (the
handler's frames, the kernel's frame, then the faulting code).  Bounded in depth and step.
"""
from __future__ import annotations

import struct
from typing import Callable, Iterator

from postmortem.core.fault import Fault
from postmortem.core.notes import Notes, Thread
from postmortem.core.stream import Memory
from postmortem.core.symbols import MappingIndex, Symbolizer
from postmortem.core.tables import MAX_FRAME_STEP, MAX_FRAMES, MAX_THREAD_STACKS, Arch, si_code_name, signal_name
from postmortem.model import Frame, Ref, Stack


class Unwinder:
    """Stacks of one core's threads, with frames named by the core's mappings and symbols."""

    def __init__(self, arch: Arch | None, memory: Memory, maps: MappingIndex,
                 symbols: Symbolizer, problem: Callable[[str], None]) -> None:
        self.arch = arch
        self.problem = problem
        self.memory = memory
        self.maps = maps
        self.symbols = symbols

    def stacks(self, notes: Notes, fault: Fault | None, ref: Callable[[int], Ref]) -> Iterator[Stack]:
        if self.arch is None:
            return
        if len(notes.threads) > MAX_THREAD_STACKS:
            self.problem(f"{len(notes.threads)} threads: stacks of the first {MAX_THREAD_STACKS} only")
        for index, thread in enumerate(notes.threads[:MAX_THREAD_STACKS]):
            if len(thread.regs) != self.arch.reg_count:
                continue
            crashed = index == 0 and fault is not None
            frames = self._thread_frames(thread, fault if crashed else None)
            regs = {"pc": thread.regs[self.arch.pc], "sp": thread.regs[self.arch.sp],
                    "fp": thread.regs[self.arch.fp]}
            title = ""
            if crashed:
                code = si_code_name(fault.signo, fault.code)
                title = signal_name(fault.signo) + (f" ({code})" if code else "")
            pid = notes.process.pid if notes.process else None
            yield Stack(frames=tuple(frames), origin="core",
                        ref=ref(thread.note_offset), thread=f"LWP {thread.tid}",
                        crashed=crashed, pid=pid, tid=thread.tid, title=title,
                        data={"registers": regs})

    def _thread_frames(self, thread: Thread, fault: Fault | None) -> list[Frame]:
        arch = self.arch
        pc, fp = thread.regs[arch.pc], thread.regs[arch.fp]
        stop_below = fault.frame_addr if fault is not None and fault.how == "sigframe" else None
        frames = [self.frame(pc, note="pc")]
        frames += self._walk(fp, stop_below)
        if stop_below is not None:
            # gdb's view: the handler's frames, the kernel's frame, then the faulting code.
            restorer = self.memory.read_word(stop_below)
            frames.append(self.frame(restorer, note="<signal handler called>")
                          if restorer is not None else Frame(note="<signal handler called>"))
            frames.append(self.frame(fault.pc, note="fault"))
            frames += self._walk(fault.fp, None)
        return frames[:MAX_FRAMES * 2]

    def _walk(self, fp: int, stop_below: int | None) -> list[Frame]:
        """Caller frames by frame pointer: [fp] = caller's fp, [fp+8] = return address.

        Bounded: the chain must climb the stack, in steps under MAX_FRAME_STEP, and
        every return address must be in executable memory.
        """
        frames: list[Frame] = []
        for _ in range(MAX_FRAMES):
            if stop_below is not None and fp >= stop_below:
                break
            pair = self.memory.read(fp, 16)
            if pair is None:
                break
            next_fp, ret = struct.unpack("<QQ", pair)
            if not self.memory.is_code(ret):
                break
            frames.append(self.frame(ret, note="", is_return=True))
            if not fp < next_fp <= fp + MAX_FRAME_STEP:
                break
            fp = next_fp
        return frames

    def frame(self, addr: int, note: str = "", is_return: bool = False) -> Frame:
        mapping = self.maps.find(addr)
        if mapping is None:
            return Frame(address=addr, note=note)
        module_offset = addr - self.maps.base_of(mapping.path)
        # A return address points after the call; look up the call itself.
        symbol = self.symbols.lookup(mapping.path, module_offset - (1 if is_return else 0))
        if symbol is not None:
            name, symbol_offset = symbol
            return Frame(function=name, module=mapping.path, address=addr,
                         offset=symbol_offset + (1 if is_return else 0), note=note)
        return Frame(module=mapping.path, address=addr, offset=module_offset, note=note)
