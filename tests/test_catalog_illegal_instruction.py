"""cudaErrorIllegalInstruction (715) is weak for the job's code (tools/catalogs/gen_cuda.py): no
compiled kernel holds an illegal instruction, the GPU meets one when code memory or a jump target
is corrupt -- a library kernel's bug and a failing GPU alike.  An illegal address (700) reads as
weakly, as messages.toml cuda_illegal_access reads the same text (audit 6 M10)."""
from __future__ import annotations

from postmortem.knowledge import catalog as C


def test_an_illegal_instruction_is_a_weak_sign_of_the_jobs_code():
    # fixtures/validation20 darknet-3gpu-rig-illegal-instruction-hardware-pcie-extenders-51 (AlexeyAB/darknet
    # thread; the reporter found a hardware fault): darknet's own CUDA check line
    (e,) = C.cuda_errors_in("CUDA Error: an illegal instruction was encountered: No error")
    assert e.name == "cudaErrorIllegalInstruction" and e.cause == "app_error" and e.strength == "subsystem"


def test_an_illegal_address_reads_as_weakly_as_its_message_pattern():
    # audit 6 M10: one text, one strength -- messages.toml cuda_illegal_access reads "CUDA error: an illegal
    # memory access" weakly (validation21 icefall-zipformer-ddp-illegal-address-bad-gpu-04 is a bad GPU);
    # the THCudaCheck line of validation20 illegal-address-index-out-of-range-trades-vis-25 reads the same
    (e,) = C.cuda_errors_in("THCudaCheck FAIL file=/opt/conda/conda-bld/pytorch_1573049301898/work/aten/src/THC/"
                            "THCCachingHostAllocator.cpp line=278 error=77 : an illegal memory access was encountered")
    assert e.name == "cudaErrorIllegalAddress" and e.cause == "app_error" and e.strength == "subsystem"


def test_a_device_side_assert_keeps_its_specific_reading():
    # near miss: a device-side assert is the job's kernel asserting on its own data (710 stays specific)
    (e,) = C.cuda_errors_in("RuntimeError: CUDA error: device-side assert triggered")
    assert e.name == "cudaErrorAssert" and e.strength == "specific"
