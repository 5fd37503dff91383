"""cudaErrorIllegalInstruction (715) is weak for the job's code (tools/catalogs/gen_cuda.py): no
compiled kernel holds an illegal instruction, the GPU meets one when code memory or a jump target
is corrupt -- a library kernel's bug and a failing GPU alike.  An illegal address (700) keeps its
reading."""
from __future__ import annotations

from postmortem.knowledge import catalog as C


def test_an_illegal_instruction_is_a_weak_sign_of_the_jobs_code():
    # fixtures/validation20 darknet-3gpu-rig-illegal-instruction-hardware-pcie-extenders-51 (AlexeyAB/darknet
    # thread; the reporter found a hardware fault): darknet's own CUDA check line
    (e,) = C.cuda_errors_in("CUDA Error: an illegal instruction was encountered: No error")
    assert e.name == "cudaErrorIllegalInstruction" and e.cause == "app_error" and e.strength == "subsystem"


def test_an_illegal_address_keeps_its_specific_reading():
    (e,) = C.cuda_errors_in("RuntimeError: CUDA error: an illegal memory access was encountered")
    assert e.name == "cudaErrorIllegalAddress" and e.strength == "specific"
