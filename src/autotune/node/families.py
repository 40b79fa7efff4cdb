"""Name a failure's family from what the log says, in words any engine uses, not its sentences.

Rules (``rules/*.yaml``) match sentences an engine is known to print; a log from an engine or
version no rule was written from says the same things in other words. This module scores
each family of failure from the *vocabulary* of the lines that matter, so that a sentence
never seen still lands in its family:

- the **exception type** of the first fatal exception (``ModuleNotFoundError`` is an import
  failure whatever its message; ``AssertionError`` is an assertion unless its message names a
  more specific family; ``ValueError`` says nothing by itself);
- the **words of its message** and of the first error lines: memory words (``out of memory``,
  ``failed to allocate``, sizes), cache words next to memory words (a KV cache that does not
  fit), kernel and architecture words (``sm_90``, ``ptxas``, ``no kernel image``, ``compute
  capability``), loader words (``No module named``, ``undefined symbol``), argument and
  validation shapes (``error: unrecognized arguments``, ``validation error for``, ``must be
  divisible``, a path that does not exist), network and collective words (``NCCL``,
  ``Connection reset``, ``Address already in use``), timeout words (``watchdog``, ``timed
  out``), capture words, assertion shapes (``Assertion ... failed``, ``*_ASSERT``), crash
  signals (``SIGSEGV``, ``Signal (11) received``, ``Killed`` at the end of a line);
- the **frames** of a traceback cut before its exception (a capture frame, an allocator
  frame, a process-group frame, an import statement);
- the **activity** of the lines just before the first failure (NCCL set-up, KV-cache sizing).

Each line gets a weight for how much it tells (the exception line most, context least) and
each clue a weight for how decisive it is; a family's score is the sum over lines of the
line's weight times its best clue. The top family is the answer when it is decisive enough
and clear of the runner-up; otherwise none (the caller answers ``unknown`` with the evidence
line). Timeout words are resolved by where the log stopped: while serving, a watchdog; before
the server was ready, a start-up timeout.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from autotune.models import Cause

__all__ = [
    "BUILDING_FAILED",
    "FAMILY_ORDER",
    "GENERIC",
    "REFINES",
    "Focus",
    "Verdict",
    "decisive",
    "fatal_sign",
    "names",
    "name_family",
    "scores",
]

# How much a line tells, by what it is.
EXCEPTION_LINE = 1.0  # the first fatal exception line (and its message's continuation lines)
ERROR_LINE = 0.8  # the first error line
LATER_ERROR_LINE = 0.4  # later error lines (echoes and noise are frequent)
WARNING_LINE = 0.6  # a warning naming a family, when no error line names one
FRAME_LINE = 0.6  # a frame of a traceback cut before its exception
DEEP_LINE = 1.0  # one of the deepest code lines of such a traceback
CONTEXT_LINE = 0.3  # a progress line just before the first failure: what was being done
PHASE_PRIOR = 1.5  # the phase reached, when the traceback is cut before its exception
# What one kind of line may add to a family at most: many frames of one call chain, or many
# progress lines of one activity, are one fact.
CAPS = {"frame": 2.5, "deepest": 2.5, "cut": 2.5, "context": 1.2}

DECIDES = 2.0  # the least score that names a family
DECISIVE = 3.0  # a clue this strong names its family wherever it stands in a message
REFINE = 1.2  # the least score of a family that says which kind of a broader one it was

_TIMEOUT = "timeout"  # timeout words: a watchdog while serving, a start-up timeout before
_TOO_LONG = "too long"  # a request longer than the server takes: while serving, its requests
# failed and it stayed up (benchmark_errors); before the server was up, no request was sent


@dataclass(frozen=True)
class _Clue:
    family: Cause | str
    regex: re.Pattern[str]
    weight: float


def _clues(*rows: tuple[Cause | str, float, str]) -> tuple[_Clue, ...]:
    return tuple(_Clue(family, re.compile(pattern), weight) for family, weight, pattern in rows)


# Memory, cache and host words, composed below. A state word ("is empty", "is 0") says a
# size is nothing; of the KV cache only in the clause where the cache is its subject.
_STATE = r"is (?:0|zero|negative|empty)\b"
_SHORT_OF = (
    r"(?:(?i:out of memory|not enough|no enough|cannot get \d+|insufficient|failed to allocate|"
    r"cannot allocate|"
    r"unable to allocate|could not allocate|exceed|larger than|too (?:small|large|few)|"
    r"smaller than|fewer \w+(?: \([^)]*\))? than|"
    r"\bno (?:\w+ ){0,2}(?:memory|room|space)\b|\bleaves? no\b|cannot fit|can't fit|"
    r"does(?: not|n't) fit|but only|only [\d.]+ ?\w* (?:\w+ )?(?:available|free|left)|"
    # a pool run dry: exhausted, no free blocks, no free space found, ran out of it (a hint
    # "if you are running out of VRAM" is no fact)
    r"\bexhausted\b|\bno free\b|(?:find|found) (?:no |any )?free\b|\b(?:ran|runs) out of\b)|"
    r"OOM\b|"
    r"(?i:(?:cannot|can't|unable to) (?:hold|store|serve))|"
    r"(?i:more \w+(?: \w+)?(?: \([^)]*\))? than (?:is )?available)|"
    r"<= ?0\b|(?:^|[\s=:(\[])-\d|must be (?:> ?0|positive|greater than (?:0|zero))\b)"
)
_SHORT = rf"(?:{_SHORT_OF}|{_STATE})"
_CACHE = (
    r"(?:\b[Kk][Vv][ _-]?[Cc]ache|kv_cache|cache blocks?|(?:GPU|gpu|cuda) blocks|num_gpu_blocks|"
    r"(?:memory|token|KV) pool|max_total_num_tokens|mem[-_]fraction[-_]static|"
    r"gpu[-_]memory[-_]utilization|prefill tokens|batch[-_](?:prefill|total)[-_]tokens|"
    r"cache[-_]max[-_]entry|free_gpu_memory_fraction|paged KV|tokens in (?:the )?cache|"
    r"cache entries|free blocks|blocks? (?:from|in) the pool|block pool|paged cache|"
    r"cache capacity|cache budget|max_total_token_num|pages? (?:from|in) (?:the )?`?\w*[Pp]ool|"
    r"page[ _-]?pool)"
)
_HOST = r"(?:\b(?:host|CPU|cpu|RAM|system|swap|pinned)\b)"

# A shell's job report: "zsh: ", "bash: line 1:  4242 " before how the job ended.
_SHELL_JOB = r"(?i:(?:zsh|bash|sh|ksh|dash): (?:line \d+: +)?(?:\d+ +)?)"

# The vocabulary of each family in the message of an exception or an error line.
WORDS: tuple[_Clue, ...] = _clues(
    # --- memory ---------------------------------------------------------------------------------
    (Cause.KV_POOL_OOM, 3.5, rf"^(?=.*{_CACHE})(?=.*{_SHORT_OF})"),
    (Cause.KV_POOL_OOM, 3.5, rf"{_CACHE}[^,;]*?\b{_STATE}"),
    # the pool's size reported as nothing ("max_total_num_tokens=0", "num_gpu_blocks: 0")
    (
        Cause.KV_POOL_OOM,
        3.5,
        r"\b(?:max_total_num_tokens|num_gpu_blocks|gpu_blocks|max_num_tokens|kv_cache_tokens|"
        r"(?:GPU|gpu) blocks)\s?[=:]\s?0\b",
    ),
    (Cause.HOST_OOM, 3.5, rf"^(?=.*{_HOST}.{{0,40}}memory)(?=.*{_SHORT})"),
    (
        Cause.HOST_OOM,
        3.5,
        r"(?i:oom[-_ ]?kill)|OOMKilled|Out of memory: Kill|Killed process \d+|invoked oom-killer|"
        r"Memory cgroup out of memory|killed as a result of limit of|DefaultCPUAllocator|"
        r"std::bad_alloc|^\s*MemoryError\b|"
        r"Cannot allocate memory|memory pressure|running low on memory|(?:^|[\s\]|])Killed\s*$|"
        r"OUT_OF_HOST_MEMORY|result 'oom-kill'",
    ),
    # a loader's guard refusing a model the machine's memory cannot hold, in words without
    # "memory" (Ollama's "model request too large for system", LM Studio's "insufficient
    # system resources")
    (
        Cause.HOST_OOM,
        3.5,
        r"(?i:\b(?:too (?:large|big)|exceeds what is available) for (?:the |this |your )?"
        r"(?:system|host|machine)\b|\binsufficient system resources\b)",
    ),
    # a service manager's report that the process was killed (systemd: "code=killed, status=9")
    (Cause.HOST_OOM, 3.0, r"code=killed, status=9\b|status=9/KILL"),
    # an allocation of a host-side buffer (CPU, pinned, CUDA_Host) that failed
    (
        Cause.HOST_OOM,
        3.5,
        r"^(?=.*(?i:unable|cannot|can't|could not|failed|failure))(?=.*(?i:alloc))"
        r"(?=.*\b(?:CPU|cpu|host|Host|pinned|CUDA_Host)[ _](?:buffer|memory|tensor))",
    ),
    (
        Cause.HOST_OOM,
        2.0,
        r"\bSIGKILL\b|signal 9\b|code[:= ]-9\b",
    ),
    # a process that a SIGKILL ended, in a launcher's words ("exited on signal 9 (Killed)")
    (
        Cause.HOST_OOM,
        3.0,
        r"(?i:exited|killed|terminated|died|ended)(?: \w+){0,2} (?:on |by |with |from )?"
        r"(?:signal:? 9\b|SIGKILL\b|signal:? Killed\b)",
    ),
    # an exit status of 137 (128 + SIGKILL) or -9, as a shell, Docker or Kubernetes reports it
    (
        Cause.HOST_OOM,
        3.0,
        r"(?i:exit(?:ed)?[ _]?(?: with)?(?: status| ?code)?)[:= ]+(?:137|-9)\b|"
        r"[Ss]ignal: killed",  # Go's words for a child killed by SIGKILL
    ),
    # an exit status that is a signal (128 + N): 132 an illegal instruction, 139 a segfault
    (
        Cause.ARCH_UNSUPPORTED,
        3.0,
        r"(?i:exit(?:ed)?[ _](?:with )?(?:status|code))[:= (]+(?:132|-4)\b",
    ),
    (
        Cause.RUNTIME_CRASH,
        3.0,
        r"(?i:exit(?:ed)?[ _](?:with )?(?:status|code))[:= (]+(?:139|-11|134|-6|135|-7|136|-8)\b|"
        # Windows: an access violation, a fail-fast abort, a corrupted heap
        r"\b0x[Cc]0000(?:005|409|374)\b",
    ),
    (Cause.ARCH_UNSUPPORTED, 3.0, r"\b0x[Cc]000001[Dd]\b"),  # Windows: an illegal instruction
    # a program or library that is not there: a shell's 127 ("command not found") and
    # Windows' STATUS_DLL_NOT_FOUND, STATUS_ENTRYPOINT_NOT_FOUND, STATUS_DLL_INIT_FAILED
    (
        Cause.IMPORT_ERROR,
        3.0,
        r"(?i:exit(?:ed)?[ _]?(?: with)?(?: status| ?code)?)[:= (]+127\b|: command not found\b|"
        r"\b0x[Cc]00001(?:35|39|42)\b",
    ),
    # a shell's report of how its job ended names the signal's family: an abort, a segfault or
    # a bus error a crash, a kill the OOM killer (docs/failures.md), an illegal instruction a
    # build for another CPU
    (
        Cause.RUNTIME_CRASH,
        3.0,
        r"^" + _SHELL_JOB + r"(?:abort(?:ed)?|segmentation fault|bus error|"
        r"floating point exception)\b",
    ),
    (Cause.HOST_OOM, 3.0, r"^" + _SHELL_JOB + r"killed\b"),
    (Cause.ARCH_UNSUPPORTED, 3.0, r"^" + _SHELL_JOB + r"illegal (?:hardware )?instruction\b"),
    (
        Cause.CUDA_OOM,
        3.0,
        r"out of memory|OutOfMemory|\bOOM\b|OUT_OF_MEMORY|cudaErrorMemoryAllocation|"
        r"RESOURCE_EXHAUSTED|CUBLAS_STATUS_ALLOC_FAILED|Tried to allocate|OUT_OF_DEVICE_MEMORY|"
        r"hipErrorOutOfMemory",
    ),
    (
        Cause.CUDA_OOM,
        2.0,
        r"[Ff]ailed to allocate|[Aa]llocation (?:\S+ )*failed|unable to allocate|"
        r"could not (?:be )?allocated?|not enough (?:GPU |device |VRAM |video )?memory|"
        r"insufficient (?:GPU |device |VRAM )?memory|exceeds? (?:the )?(?:available |allowed )?"
        r"(?:GPU |device )?memory|memory (?:is )?(?:insufficient|exhausted)",
    ),
    # a device's memory (VRAM, GPU memory) too small for what was asked, in any words: "does
    # not fit in the available VRAM", "requires more memory than is available on the GPU"
    (
        Cause.CUDA_OOM,
        3.0,
        rf"^(?=.*(?:\bVRAM\b|\bvram\b|\bGPU\b|\bgpu\b|[Dd]evice memory|[Vv]ideo memory))"
        rf"(?=.*(?i:memory|vram))(?=.*{_SHORT})(?!.*{_HOST})",
    ),
    # an allocation of a device buffer (or one of a given size) that failed
    (
        Cause.CUDA_OOM,
        3.0,
        r"^(?=.*(?i:unable|cannot|can't|could not|failed|failure))(?=.*(?i:alloc))"
        r"(?=.*(?i:\bdevice memory|\bbuffers?\b|\bof size \d))",
    ),
    # an allocation that failed, with its size
    (
        Cause.CUDA_OOM,
        3.0,
        r"^(?=.*(?i:unable|cannot|can't|could not|failed|failure))(?=.*(?i:alloc))"
        r"(?=.*\d ?[KMGT]i?B\b)",
    ),
    # --- the hardware ---------------------------------------------------------------------------
    (
        Cause.ARCH_UNSUPPORTED,
        3.5,
        r"no kernel image|NoKernelImage|kernel image is invalid|InvalidKernelImage|"
        r"invalid device function|NoBinaryForGpu|NO_BINARY_FOR_GPU|"
        r"ptxas fatal|PTXAS error|(?:CUDA|HIP) error: operation not supported|"
        r"cudaErrorNotSupported|"
        r"\bptxas\b.{0,80}\berror\b|requires? \.target sm_\d+|"
        r"[Uu]nsupported (?:gpu |GPU |CUDA |cuda |SM |sm )?architecture"
        r"(?!s?:? ?\[?['\"]?\w*(?:For|Model|LM))|\bSIGILL\b|"
        r"[Ii]llegal instruction(?! was encountered)|signal 4\b|(?:un|not )supported (?:on|by|"
        r"for) (?:this|the current"
        r"|your) (?:GPU|device|hardware|platform)|only supports? (?:Ampere|Hopper|Blackwell|"
        r"Volta|Turing|(?i:sm)[_ ]?\d+|GPUs)|[Bb]float16 is only supported|driver\b.{0,30}\bis "
        r"(?:insufficient|too old)|UNSUPPORTED_PTX|unsupported toolchain|PTX JIT|incompatible "
        r"(?:device|GPU|gpu|hardware)|capabilit(?:y|ies) sm_?\d+|is not a recognized processor|"
        r"INVALID_ISA|(?i:unsupported_?ptx)|(?:CUDA|HIP) driver error: operation not supported|"
        r"UNSUPPORTED_FEATURE|(?:[Yy]our|[Tt]his|[Tt]he) (?:GPU|device|hardware|CPU) (?:does "
        r"not|doesn't) support|not supported by (?:your|this) CPU|CPU (?:does not|doesn't) "
        r"support|\bAVX\w*\b.{0,40}not supported|"
        r"(?:GPU|device|gpu) arch(?:itecture)? ['\"`]?\w+['\"`]? is not supported",
    ),
    # a kernel compiler (ptxas, nvcc, hipcc, ...) run for a named GPU architecture that exits
    # with an error: it cannot build code for that GPU
    (
        Cause.ARCH_UNSUPPORTED,
        3.0,
        r"^(?=.*\b(?:ptxas|nvcc|hipcc|clang\+\+|nvrtc)\b)"
        r"(?=.*(?:--gpu-name|-arch|--offload-arch|--gpu-architecture)[= ]['\"]?(?:sm_|compute_|"
        r"gfx)\d)"
        r"(?=.*(?:non-zero exit|exit(?:ed)? (?:with )?(?:status|code) [1-9]|returned [1-9]|"
        r"failed\b))",
    ),
    # the kernel compiler (Triton's MLIR and LLVM) cannot lower a kernel for this GPU: an
    # instruction it cannot select, a check of its own that fails
    (
        Cause.ARCH_UNSUPPORTED,
        3.0,
        r"LLVM ERROR: Cannot select|mlir::triton|\.triton/llvm/|triton::gpu::\w+Attr",
    ),
    # a GPU refused in compute-capability words ("compute capability below 8.0 is not
    # supported", "needs compute capability >= 8.9"); a device report that merely states it
    # ("Device 0: ..., compute capability 8.6, VMM: yes", printed before every CUDA error of
    # llama.cpp and Ollama) refuses nothing and is a hint only
    (
        Cause.ARCH_UNSUPPORTED,
        3.5,
        r"^(?=.*[Cc]ompute [Cc]apability)(?=.*(?:not supported|unsupported|not compatible|"
        r"incompatible|requires?\b|required|needs?\b|at least|[Mm]inimum|below|lower than|"
        r"less than|too (?:low|old)|>=|does not|doesn't|cannot|can't|only\b|[Mm]in\b))",
    ),
    (Cause.ARCH_UNSUPPORTED, 1.0, r"[Cc]ompute [Cc]apability"),
    # the hardware's architecture refused in plain words ("GPU architecture 'Volta'
    # unsupported", "this card's architecture (Maxwell) is not supported")
    (
        Cause.ARCH_UNSUPPORTED,
        3.0,
        r"(?i:\b(?:GPU|device|card|hardware|accelerator)(?:'s)? arch(?:itecture)?)\b.{0,40}"
        r"(?:not (?:yet )?supported|unsupported|not compatible|incompatible)",
    ),
    # a library or kernel file missing for the GPU architecture it names ("no
    # TensileLibrary_gfx90a.dat", "kernels for sm_61 not found")
    (
        Cause.ARCH_UNSUPPORTED,
        3.0,
        r"(?i:\bno|missing|not found|cannot find|could not find|unable to find)\b.{0,40}"
        r"(?:\bgfx|_gfx|\bsm_?)\d{2,4}\w*|"
        r"(?:\bgfx|\bsm_?)\d{2,4}\w*\b.{0,40}(?i:not found|missing)",
    ),
    (
        Cause.ARCH_UNSUPPORTED,
        2.0,
        r"requires? (?:GPUs? |devices? )?(?:with )?sm_?\d+|\bsm_?\d{2,3}\+|"
        r"requires? (?:an? )?(?:A100|A800|H100|H800|H200|B200|Ampere|Hopper|Blackwell|Ada)\b|"
        # a message naming an older GPU generation refuses it
        r"\b(?:Volta|Turing|Pascal|Maxwell|Kepler)(?: (?:and|or) \w+)? GPUs\b|"
        r"\bsm_?\d{2,3}a?\b.*(?:not|un)|(?:not|un)\w* .*\bsm_?\d{2,3}a?\b|\bgfx\d{3,4}\w*\b.*"
        r"(?:not|un)|(?:requires?|needs?) (?:a )?(?:newer )?(?:GPU|device|hardware)|"
        r"[Mm]in(?:imum)?\.? (?:compute |CUDA )?capability|[Cc]urrent (?:compute )?capability",
    ),
    # --- the model ------------------------------------------------------------------------------
    (
        Cause.MODEL_UNSUPPORTED,
        3.5,
        r"(?:[Mm]odel|MODEL) (?:architecture|type)s?\b.*(?:not (?:supported|recogni[sz]ed)|"
        r"unsupported|unknown|failed to be inspected)|(?i:(?:unknown|unsupported|unrecognized) "
        r"model (?:architecture|type))|[Uu]nsupported (?:[\w -]+ )?model class|"
        r"Unrecognized configuration class|for this kind of AutoModel|not supported for AutoModel|"
        r"[Aa]rchitecture '?\w+(?:For\w+|Model|LM)'? (?:is )?not "
        r"supported|[Uu]nsupported architectures?:? ?\[?['\"]?"
        r"\w+(?:For\w+|Model|LM)\b|For(?:CausalLM|ConditionalGeneration|\w*Classification)'?\]? "
        r"(?:is|are) not supported|does not (?:recognize|support) (?:this|the) (?:model|"
        r"architecture)|not a supported model|cannot find tensor|has no \w+ implementation|"
        r"is not supported by (?:this|the "
        r"current) (?:version|engine|backend)|KeyError: '?\w+(?:For[A-Z]\w+|LMHeadModel)'?\s*$|"
        r"(?:[Mm]odel|[Ff]ile|weights?) format (?:is )?(?:not supported|unsupported)|"
        r"[Uu]nsupported (?:model|file) format|tensor '[^']+' not found|invalid magic|"
        r"Unrecognized model in|unknown pre-tokenizer|has wrong shape|wrong number of tensors|"
        r"unexpected number of tensors|Error\(s\) in loading state_dict|"
        r"(?:Missing|Unexpected) key\(s\) in state_dict|"
        r"[Mm]odel'?s (?:architecture|type)\b.{0,40}(?:not supported|unsupported)|"
        r"not supported by your version|(?:requires|needs) a newer version of|"
        # no version of the loader (yet) that knows the model: "there may not be a release
        # version that supports this model yet", "upgrade to a version that supports this model"
        r"(?i:\bversion\b(?: of [\w.-]+)? (?:that|which) (?:supports?|knows?) (?:this|the|your) "
        r"(?:model|checkpoint|architecture))|"
        r"\b(?:weight|tensor) [\w.]+ (?:does not exist|not found)|"
        # a layer's weight the loader looks for and does not find ("model.layers.0.mlp.*")
        r"(?:[Cc]ould not|[Cc]annot|[Uu]nable to) (?:find|locate) (?:key |weight |tensor )?"
        r"['\"`]?(?:model\.)?(?:layers|h|blocks|transformer)\.\d+\.|"
        r"(?i:unsupported|unknown|unrecognized) model(?: \w+)?: ['\"`]?[A-Z]\w+|"
        # a model's class (a name of the For/Model/LM shape, never a GPU's) its loader does
        # not know: "unknown architecture: XForCausalLM", "architecture X is not recognised"
        r"(?i:unknown|unsupported|unrecogni[sz]ed) architecture:? ['\"`]?\w+(?:For[A-Z]\w*|"
        r"LMHeadModel)\b|\barchitecture ['\"`]?\w+(?:For[A-Z]\w*|LMHeadModel)['\"`]? (?:is )?"
        r"not (?:recogni[sz]ed|known)",
    ),
    # a model refused in other words: its "arch" or name not supported, an architecture name
    # (not a GPU's: sm_XX, gfx...) the loader does not support
    (
        Cause.MODEL_UNSUPPORTED,
        3.0,
        r"[Mm]odel arch\w*\b.{0,80}\bnot (?:yet )?supported|"
        r"\b[Mm]odel ['\"`]?[\w./:-]+['\"`]? (?:is )?not (?:yet )?supported\b|"
        r"^(?=.*[Mm]odel).*\barchitecture ['\"`]?(?!sm_|gfx|compute)[\w.-]+['\"`]? (?:is |are )?"
        r"not (?:yet )?supported",
    ),
    # a model file or class this build cannot load: a key its architecture needs missing from
    # the file, a tensor type it does not know, a model class an engine names as one it does
    # not support (a KeyError on a weight's name alone decides nothing: see the vocabulary test)
    (
        Cause.MODEL_UNSUPPORTED,
        3.0,
        r"key not found in model|(?:invalid|unknown|unsupported) ggml type|"
        r"does(?: not|n't) support (?:the )?\w+(?:For[A-Z]\w*|LMHeadModel)\b",
    ),
    # a model's config that the loader cannot deserialise (serde's words, any Rust server):
    # a field it needs is missing, or holds a type or variant it does not know; with the
    # position in the file, or as the whole of the error a Rust main printed (a field, or a
    # variant with the ones it knows)
    (
        Cause.MODEL_UNSUPPORTED,
        3.0,
        r"(?:missing field|unknown field|unknown variant|invalid (?:type|value): [^,]{1,40}, "
        r"expected)\b.{0,100}\bat line \d+ column \d+|"
        r"^(?:Error: )?(?:missing|unknown) field `\w+`$|"
        r"^(?:Error: )?unknown variant `[\w.-]+`, expected one of `",
    ),
    (
        Cause.MODEL_UNSUPPORTED,
        1.5,
        r"model_type|trust[-_]remote[-_]code|missing (?:weight|tensor|key)s?\b|size mismatch for",
    ),
    # --- the installation -----------------------------------------------------------------------
    (
        Cause.IMPORT_ERROR,
        3.5,
        r"No module named|undefined symbol|cannot open shared object|DLL load failed|"
        r"Could not find a version that satisfies|No matching distribution found|"
        r"[Cc]annot find (?:env |global |packed )?function|(?:[Ff]ailed to|[Cc]ould not|[Cc]annot|"
        r"[Uu]nable to) load (?:the )?(?:dynamic |shared )*(?:library|libraries|shared object)|"
        r"GLIBC\w*_[\d.]+'? not found|version `[\w.]+' not found|Symbol not found|"
        r"Library not loaded|cannot import name|PackageNotFoundError|"
        r"(?:not compiled with|compiled without) (?:CUDA|ROCm|HIP|GPU)|"
        r"operator \w+::\w+ does not exist|CUDA_HOME (?:environment variable )?is not set|"
        r"Error building extension|"
        r"Could not run '[\w:.]+' with arguments from the '\w+' backend|"
        r"error while loading shared "
        r"librar|(?:Function|symbol|Symbol) [\w.:]+ not found|module '[\w.]+' has no attribute|"
        r"(?:unable to|cannot|can't|could not|failed to) (?:find|load|open|locate) (?:the )?"
        r"(?:\w+ ){0,2}(?:library|libraries|shared object|plugin)\b|"
        # a host process (a Rust panic's message, a C++ server) that could not import the
        # engine's module, whatever error the import raised
        r"(?i:(?:unable|failed|could not|couldn't|cannot|can't)(?: to)? import (?:the )?"
        r"(?:python |py )?(?:(?:module|package) [`'\"]?[\w.-]+|[`'\"][\w.-]+[`'\"] "
        r"(?:module|package)\b))",
    ),
    # two parts built for different versions (an ABI mismatch): a serialised engine, a wheel
    (
        Cause.IMPORT_ERROR,
        3.0,
        r"(?:not compatible|incompatible) with (?:this|the (?:current|installed|running)) "
        r"version|[Vv]ersion(?: [\w.+-]+)? (?:tag )?(?:does not|doesn't|do not) match|"
        r"[Vv]ersion mismatch|Mismatch(?:Exception|Error)\b|"
        # a serialised engine or plan the runtime cannot read back (built by another version)
        r"(?i:(?:failed|unable|cannot|could not) to deserializ\w* (?:the |a |cuda |trt |"
        r"tensorrt )*(?:engine|plan)|deserializ\w* of (?:the )?(?:serialized )?(?:cuda )?"
        r"(?:engine|plan) failed)|"
        r"(?:built|compiled) (?:against|with) (?:a )?different|mismatched versions?|"
        # a toolkit that is not the one the framework was built with
        r"mismatches the version that was used to compile",
    ),
    # Triton's front end rejecting a kernel's source ("CompilationError: at 38:4: def _k(..."):
    # the kernels were written for another version of the compiler than the one installed
    (Cause.IMPORT_ERROR, 3.0, r"\bCompilationError: at \d+:\d+:"),
    # a package named as missing, compiled operators missing from the build, an install that
    # never finished: the installation, whatever failed because of it (a check, a lookup)
    (
        Cause.IMPORT_ERROR,
        3.0,
        r"(?i:\b(?:package|library|module|extension)s?\b[^.]{0,30}\b(?:is|are) not installed)|"
        r"[Pp]lease install\b.{0,80}\bpip install \S|_OpNamespace\b.{0,40}has no attribute|"
        r"subprocess-exited-with-error|Failed building wheel",
    ),
    # a runtime or loader that cannot find what it needs: built for another runtime's version
    (
        Cause.IMPORT_ERROR,
        3.0,
        r"\b(?:runtime|loader|linker)\b (?:cannot|can't|could not|failed to|unable to) "
        r"(?:find|locate|resolve) \w",
    ),
    # a compiled extension or a device's torch plug-in that is not defined where it is used:
    # its guarded import failed earlier (``try: import torch_npu`` ``except ImportError``)
    (
        Cause.IMPORT_ERROR,
        3.0,
        r"\bname '(?:torch_\w+|\w+_(?:ext|C|cuda|npu|xpu|hip|kernels?|ops)|triton|flash_attn\w*|"
        r"sgl_kernel|vllm_\w+|deep_\w+)' is not defined",
    ),
    # an import that failed, told in words by a loader that goes on ("skipping x: import
    # error", "x: import failed")
    (Cause.IMPORT_ERROR, 3.0, r"(?i:\bimport (?:error|failure|failed)\b)"),
    (
        Cause.IMPORT_ERROR,
        2.0,
        r"(?:is|are) not installed|not installed\b|[Pp]lease install|[Ff]ailed to (?:import|load "
        r"(?:library|extension|module))|could not load (?:library|module|dynamic library)|"
        r"incompatible (?:torch|CUDA|cuda|version)|built (?:against|with) (?:a )?different|"
        r"requires? .{0,60}to be installed",
    ),
    # --- the configuration ----------------------------------------------------------------------
    (
        Cause.INVALID_ARGUMENT,
        3.5,
        r"(?<!CUDA )(?<!HIP )error: (?:unrecognized arguments|argument|invalid argument: \S|"
        r"invalid choice|"
        r"the following (?:required )?"
        r"arguments|ambiguous option|unexpected argument)|unrecognized arguments|"
        r"^\s*usage: \S+ \[|validation errors? for \w+|^\s*Value error,|No such option|"
        r"\b(?:Invalid argument|INVALID_ARGUMENT): \S|"
        # any parser's refusal: Go's ("unknown flag: --x"), python-fire's, llama.cpp's own
        r"\bunknown (?:shorthand )?flag: -|Could not consume arg|error while handling argument|"
        r"Invalid value for|unexpected extra argument|must be divisible|not divisible by|"
        r"must (?:evenly )?divide|"
        r"mutually exclusive|HFValidationError|RepositoryNotFoundError|GatedRepoError|"
        r"gated repo|[Aa]ccess to model \S+ is restricted|"
        r"is not a (?:local folder|valid model identifier)|Repo id must|"
        r"\b[a-z]+(?:_[a-z]+)+ \(\d+\) (?:is|must be) (?:smaller|larger|greater|less|bigger) "
        r"than (?:the )?[a-z]+(?:_[a-z]+)+",
    ),
    (
        Cause.INVALID_ARGUMENT,
        3.0,
        r"No such file or directory|does not exist|FileNotFoundError|[Ee]rror opening .{0,80}"
        r"(?:file|engine|config)|does not appear to have (?:a )?files? named|"
        r"\b(?:[Mm]odel |[Cc]onfig |[Ww]eights? |[Cc]heckpoint )?[Ff]ile not found\b|"
        r"\b(?:path|directory|folder|file|dir) ['\"`]?[\w./~:\\-]+['\"`]? (?:is )?not found|"
        r"(?:[Cc]ould not|[Cc]annot|[Cc]an't|[Uu]nable to|[Ff]ailed to) "
        r"(?:open|find|"
        r"read|locate) "
        r".{0,60}(?:file|path|directory|folder|engine(?! to execute)|config|checkpoint|model lib)",
    ),
    (
        Cause.INVALID_ARGUMENT,
        2.5,
        r"invalid literal for \w+\(\)|"
        r"(?:is|are) not a valid|(?:[Cc]ouldn't|[Cc]ould not|[Cc]annot|[Uu]nable to|[Ff]ailed "
        r"to) parse (?:the )?(?:\w+ )?(?:parameter|argument|option|flag|value)|in (?:a |the )?"
        r"wrong format|"
        r"[Ii]nvalid (?:value|choice|option|config(?:uration)?|combination)|"
        r"[Uu]nknown (?:argument|option|quantization|dtype|backend|parameter)|[Uu]nrecognized "
        r"(?:option|argument|configuration|parameter)|(?:cannot|can't|can not) (?:be )?(?:used|"
        r"combined|enabled|set) (?:together )?with|(?:cannot|can't|can not) be (?:used|given|"
        r"passed|specified) (?:multiple times|more than once|twice)|not supported (?:with|when|"
        r"together|in "
        r"combination)|not (?:yet )?supported for (?:\w+ )?models?\b|(?:must|should) (?:be|have|"
        r"not)\b|[Ee]xpected (?:only )?(?:one of|one |a |"
        r"an )|"
        r"(?:greater|longer|larger|bigger) than (?:the )?(?:derived |allowed )?(?:maximum|max)\b|"
        r"out of range|"
        r"(?<!required )positional argument(?!s? but \d)|"
        r"should (?:provide|specify|pass|set|use) |[Pp]lease (?:input|provide|specify|pass) "
        r"(?:a |an |the )?\w|not (?:yet )?supported (?:for|with|by) (?:this|the) model|"
        r"does not (?:yet )?support (?:\w+ ){0,3}(?:[Aa]ttention|attn|quantization|"
        r"dtype|LoRA|lora|sharding|sharded|tensor parallel|pipeline parallel|speculative|prefix "
        r"caching|chunked prefill|multi-?modal|tool|streaming|feature|option|mode)",
    ),
    # a value above the limit a ``max_*`` setting of the engine allows ("LoRA rank 64 is greater
    # than max_lora_rank 16", "exceeds max_loras_per_batch"): the setting refused it; a prompt
    # or request too long for the context is not this family (``_TOO_LONG``), nor a container's
    # own bound (C++'s "larger than max_size()")
    (
        Cause.INVALID_ARGUMENT,
        3.0,
        r"^(?!.*(?i:\bprompts?\b|\binput\b|\brequests?\b|\bcontext\b|\bsequence\b))"
        r".*(?:(?:greater|larger|bigger|higher|more) than|\bexceeds?) (?:the )?(?:configured |"
        r"allowed )?[`'\"]?max_[a-z_]+\b(?!\()",
    ),
    # --- the host and the network ---------------------------------------------------------------
    (
        Cause.PORT_IN_USE,
        4.0,
        r"[Aa]ddress already in use|EADDRINUSE|AddrInUse|[Ee]rrno:? 98\b|Only one usage of each "
        r"socket address|WSAEADDRINUSE|WinError 10048|port is already allocated|(?:port|"
        r"address) \S+ "
        r"(?:is )?(?:already )?(?:in use|occupied|taken)|(?:failed|unable|could not|couldn't|"
        r"cannot|can't) (?:to )?bind|failed to listen on",
    ),
    # an error binding the server's address or port, in any web stack's words (in use, not
    # assignable, refused): "error while attempting to bind on address", "bind to x failed"
    (
        Cause.PORT_IN_USE,
        3.5,
        r"(?i:\b(?:error|fail\w*)\b.{0,40}\bbind(?:ing)?\b.{0,20}\b(?:on|to)?\s?(?:address|"
        r"port|socket|[\d.]+:\d+|\[?::)|\bbind(?:ing)?\b (?:on |to )?(?:address |port |socket )?"
        r"\S{0,40}\b(?:failed|error)\b)|[Cc]annot assign requested address|EADDRNOTAVAIL|"
        r"[Ee]rrno:? 99\b",
    ),
    (
        Cause.NCCL_ERROR,
        3.5,
        r"\b[NHR]CCL (?:error|failure|WARN)|nccl\w*(?:Error|Failure)|ncclUnhandled|ncclInternal|"
        r"ncclSystem|ncclInvalid|ncclRemote|DistBackendError|HCCL\w* ?(?:error|fail)|hccl\w* "
        r"fail|unhandled (?:cuda|system) error|Test NCCL failure|ncclCommInit\w* failed|"
        r"(?i:got completion with error)|NET/IB.*[Ee]rror|Transport init error|MPI_ABORT|MPI error",
    ),
    # the collective libraries of other accelerators (Intel's oneCCL, Cambricon's CNCL, Kunlun's
    # BKCL, Moore Threads' MCCL, ...) failing, in their own words: NCCL's family by what they are
    (
        Cause.NCCL_ERROR,
        3.5,
        r"\b(?i:one ?ccl|torch[-_]ccl)\b.{0,80}(?i:error|fail|exception)|"
        r"\b(?:CNCL|BKCL|MCCL|ECCL|XCCL|TCCL)(?:_| )?(?:error|ERROR|fail|FAIL)",
    ),
    # the transports that carry the ranks' traffic failing: Gloo's mesh, peer-to-peer access
    # between GPUs, RDMA verbs and UCX (whose "Cannot allocate memory" is the locked-memory
    # limit, not the host running out); weighed above the memory words
    (
        Cause.NCCL_ERROR,
        4.0,
        r"connectFullMesh failed|[Gg]loo\b.{0,60}\b(?:failed|error)|peer access is not "
        r"supported|cudaErrorPeerAccessUnsupported|P2P is not supported|\bibv_\w+\b.{0,60}"
        r"(?:failed|error)|\[UCX ERROR\]|\bUCX\b.{0,40}(?:failed|error)|\bUC[XC] +ERROR\b",
    ),
    # a request's KV cache handed between prefill and decode instances (Mooncake, NIXL, an
    # engine's own connector) that failed or timed out: the transport between the ranks failed,
    # whatever carries it; weighed above the timeout words (no collective hung)
    (
        Cause.NCCL_ERROR,
        4.0,
        r"\bKVTransferError\b|(?i:\b(?:KV(?:[ _-]?cache)?|decode|prefill|mooncake|nixl)\b"
        r"(?: \w+){0,3}? transfers? (?:\S+ ){0,4}?(?:failed|failure|timed out|timeout|error))",
    ),
    (
        Cause.NCCL_ERROR,
        3.0,
        r"^(?=.*(?:NCCL|nccl|gloo|Gloo|c10d|ProcessGroup|TCPStore|rendezvous))(?=.*(?:Connection "
        r"(?:reset|refused|closed)|Broken pipe|closed by (?:peer|remote)|remote process exited))",
    ),
    (
        Cause.NCCL_ERROR,
        2.0,
        r"^(?=.*(?:NCCL|nccl|gloo|Gloo|c10d|ProcessGroup|\brank\b|distributed|collective|TCPStore|"
        r"rendezvous))(?=.*(?:Connection (?:reset|refused|closed)|Broken pipe|[Ee]rror|[Ff]ail|"
        r"closed))",
    ),
    (Cause.NCCL_ERROR, 1.5, r"\b[NHR]CCL\b|\bnccl\w*|\bhccl\w*|\bgloo\b|\bMPI\b"),
    # --- hangs ----------------------------------------------------------------------------------
    (
        Cause.WATCHDOG_TIMEOUT,
        3.5,
        r"[Ww]atchdog (?:caught|timeout|timed out|detected)|collective operation timeout|"
        # the watchdog named after what it found: a collective that never completed
        r"(?:failure|timeout|hang) (?:was )?detected by (?:the )?[Ww]atchdog|"
        r"before timing out|Timeout\(ms\)=\d+|"
        r"[Hh]eartbeat (?:monitor )?(?:timed out|timeout)|(?:RPC|rpc|collective|all_?reduce|"
        r"all_?gather|broadcast|execute_model|dequeue) .{0,60}(?:timed out|timeout)",
    ),
    (
        Cause.WATCHDOG_TIMEOUT,
        3.5,
        r"^(?=.*(?:\bworkers?\b|\bclients?\b|\branks?\b|\bstore\b|rendezvous|barrier|peers?\b|"
        r"collective))(?=.*(?:[Tt]imed out|[Tt]imeout\b|[Tt]ime out))",
    ),
    (
        Cause.STARTUP_TIMEOUT,
        3.5,
        r"^(?=.*(?:start|ready|initiali[sz]|launch|boot|health|warm ?up|to load))"
        r"(?=.*(?:timed? ?out|timeout|within \d+|took too long|[Ee]xceeded|(?:failed|not ready|"
        r"unhealthy|no response) after \d+(?:\.\d+)? ?(?:s|secs?|seconds|m|mins?|minutes)\b))",
    ),
    (_TIMEOUT, 2.5, r"\bTimeoutError\b|[Tt]imed out|[Tt]ime(?:d)? ?out after|deadline exceeded"),
    # --- CUDA graphs ----------------------------------------------------------------------------
    (
        Cause.CUDA_GRAPH_CAPTURE,
        4.0,
        r"[Cc]apture cuda graph failed|CUDA ?[Gg]raph.{0,40}(?:fail|error)|[Gg]raph captur(?:e|ing)"
        r".{0,40}(?:fail|error)|stream is capturing|cudaErrorStreamCapture|during (?:CUDA )?graph "
        r"capture|cudaStreamCaptureStatus|uncaptured work|capture_begin|capture_end|"
        r"error during capture|"
        # a graph that cannot be captured, an error while capturing one, CUDA's and HIP's
        # stream-capture error codes, an operation refused on a capturing stream
        r"(?:cannot|can't|could not|unable to|failed to) (?:be )?captur|"
        r"(?:[Ee]rror|[Ff]ail\w*)\b.{0,40}\b[Cc]aptur\w* (?:a |the )?(?:CUDA |cuda |HIP )?graph|"
        r"(?:cuda|hip)ErrorStreamCapture|hipErrorCapturedEvent|StreamCapture[A-Z]\w+|"
        r"capturing (?:blocking )?stream|"
        # an accelerator runtime's words for the same refusal ("stream is captured", "the current
        # capture mode does not support this operation")
        r"stream is captured|captured[- ]stream|capture mode does not support",
    ),
    # --- internal checks ------------------------------------------------------------------------
    (
        Cause.ASSERTION,
        3.0,
        r"(?i:assertion)\b.{0,200}(?i:fail)|[A-Z]+_ASSERT\b|GGML_ASSERT|Check failed:|TORCH_CHECK|"
        r"[Aa]ssert(?:ion)? (?:error|failure)|"
        # the framework's own checks in their words (PyTorch's TORCH_CHECK and internal asserts)
        r"\bINTERNAL ASSERT FAILED\b|to be true, but got false",
    ),
    # --- crashes --------------------------------------------------------------------------------
    (
        Cause.RUNTIME_CRASH,
        3.0,
        r"illegal memory access|misaligned address|unspecified launch failure|device-side assert|"
        r"illegal instruction was encountered|fallen off the bus|\bXid\b|"
        r"Segmentation fault|SIGSEGV|SIGBUS|SIGABRT|SIGFPE|\b[Ss]egfault\b|"
        r"[Ss]ignal \(?(?:11|6|7|8)\)? received|"
        r"[Cc]aught signal (?:11|6|7|8)\b|signal (?:11|6|7|8)\b|core dumped|Fatal Python error|"
        r"panicked at|^panic: |terminate called|Floating point exception|"
        r"terminating (?:due to|with) uncaught exception|"
        # a native library aborting the process in its own words
        r"\bAbort was called at \d+ line\b|\babort\(\) called\b|"
        r"probability tensor contains|"
        r"Memory access fault|double free|corrupted (?:size|double)|cudaErrorLaunchFailure|"
        # a signal handler's crash report (OpenMPI, UCX, Triton) and the kernel's report of a
        # GPU page fault (amdgpu) or of a GPU error (NVIDIA's Xid, above)
        r"^\s*(?:\[[^\]]*\] )?Signal code: |Failing at address|VM_L2_PROTECTION_FAULT|"
        r"amdgpu\b.{0,80}\bpage fault|GPU reset (?:begin|failed)|"
        r"CUBLAS_STATUS_EXECUTION_FAILED|CUDA error: (?!out of memory)|"
        # an accelerator's compute core that faulted while running a kernel, in the words of
        # Ascend's runtime ("The vector core execution is abnormal", "aicore error exception")
        r"(?i:\b(?:vector|cube|ai) ?core execution is abnormal|"
        r"\b(?:aicore|aivec|aic|vector core|cube core) (?:error )?exception\b)",
    ),
    (Cause.RUNTIME_CRASH, 1.5, r"\bAborted\b|\bsegfault|[Cc]rash(?:ed)?\b"),
    # a call that does not fit its function's signature: the engine's own code (or two of its
    # packages at different versions) is wrong, not a setting
    (
        Cause.RUNTIME_CRASH,
        3.0,
        r"takes (?:from \d+ to )?\d+ positional arguments? but \d+ (?:was|were) given|"
        r"missing \d+ required (?:positional|keyword-only) arguments?:",
    ),
    # a kernel's own assert is a crash in GPU code, not a failed check of the engine's
    (Cause.RUNTIME_CRASH, 3.5, r"_assert_async_cuda_kernel|block: \[\d+,\d+,\d+\], thread: \["),
    # a kernel whose tiles need more on-chip memory than this GPU has
    (
        Cause.ARCH_UNSUPPORTED,
        3.0,
        r"out of resource: shared memory|OutOfResources|[Hh]ardware limit:? \d+|"
        # cuBLAS refusing an operation this GPU cannot do (CUBLAS_STATUS_NOT_SUPPORTED)
        r"requested functionality is not supported|CUBLAS_STATUS_(?:NOT_SUPPORTED|ARCH_MISMATCH)",
    ),
    # --- the node -------------------------------------------------------------------------------
    # the device is held by another process (exclusive mode, a second server, a leftover)
    (
        Cause.GPU_NOT_CLEAN,
        3.5,
        r"busy or unavailable|[Dd]evice acquire failed|cudaErrorDevicesUnavailable|memory "
        r"capacity is unbalanced",
    ),
    # --- the benchmark client -------------------------------------------------------------------
    (
        Cause.BENCHMARK_ERRORS,
        2.5,
        r"ConnectionRefusedError|[Ee]rrno 111\b|ClientConnectorError|ServerDisconnectedError|"
        r"RemoteDisconnected|Max retries exceeded|Failed to establish a new connection|"
        r"Cannot connect to host|ClientResponseError|StatusCode\.UNAVAILABLE|"
        r"failed to connect to all addresses",
    ),
    # a client library's own exception types: the benchmark's requests failed or timed out
    (
        Cause.BENCHMARK_ERRORS,
        3.0,
        r"\b(?:ReadTimeout|ConnectTimeout|ConnectError|APIConnectionError|APITimeoutError|"
        r"RemoteProtocolError|ClientPayloadError|ClientOSError|ServerTimeoutError|"
        r"APIStatusError)\b|\bopenai\.\w+Error\b|\bError code: [45]\d\d\b",
    ),
    # an HTTP error status as a client sees it (requests', httpx's, a script's own words)
    (
        Cause.BENCHMARK_ERRORS,
        3.0,
        r"\b[45]\d\d (?:Server|Client) Error\b|\b(?:429 Too Many Requests|502 Bad Gateway|"
        r"503 Service Unavailable|504 Gateway Time-?out)\b|\bstatus(?: code)?:? [45]\d\d\b",
    ),
    # a benchmark's own summary that some of its requests failed
    (Cause.BENCHMARK_ERRORS, 3.0, r"^\s*Failed requests:\s+[1-9]\d*\s*$"),
    # a request refused for its length: a prompt or input longer than the model or build takes
    (
        _TOO_LONG,
        3.5,
        r"(?i:\bprompts? (?:\w+ ){0,3}(?:longer than|of at most|too long)|maximum context "
        r"length is \d+|\binput (?:is )?too long\b|(?:prompt|input|request) (?:\w+ )?exceeds? "
        r"(?:the )?(?:model'?s? )?(?:maximum|max|context))",
    ),
    # --- status codes ---------------------------------------------------------------------------
    # An error code's meaning is the same whichever library reports it (CUDA runtime and
    # driver, cuDNN, cuBLAS, HIP, Vulkan, SYCL and Level Zero): an allocation that failed, a
    # device that faulted or was lost, a build or library that does not fit this machine.
    (
        Cause.CUDA_OOM,
        3.0,
        r"\b[A-Z]+(?:_[A-Z]+)*_(?:ALLOC(?:ATION)?_FAILED|OUT_OF_(?:DEVICE_)?MEMORY|"
        r"OUT_OF_RESOURCES)\b|(?:cuda|hip)ErrorMemoryAllocation|ErrorOutOfDeviceMemory",
    ),
    (
        Cause.RUNTIME_CRASH,
        3.0,
        r"\b[A-Z]+(?:_[A-Z]+)*_(?:EXECUTION_FAILED|DEVICE_LOST|ILLEGAL_ADDRESS|LAUNCH_FAIL\w*|"
        r"MISALIGNED_ADDRESS|HARDWARE_STACK_ERROR|ECC_UNCORRECTABLE)\b|ErrorDeviceLost\b|"
        r"(?:cuda|hip)Error(?:IllegalAddress|LaunchFailure|MisalignedAddress|IllegalInstruction|"
        r"HardwareStackError|Assert|ECCUncorrectable)\b",
    ),
    (
        Cause.ARCH_UNSUPPORTED,
        3.0,
        r"\b[A-Z]+(?:_[A-Z]+)*_(?:STATUS|ERROR)_(?:ARCH_MISMATCH|NOT_SUPPORTED)\b|"
        # cuDNN's frontend saying the same: no engine (kernel) for this operation here
        r"\b(?:GET|FIND) was unable to find an engine to execute this computation",
    ),
    # the GPU driver's own library missing, a stub, or at another version than the toolkit
    (
        Cause.IMPORT_ERROR,
        3.5,
        r"CUDA_ERROR_(?:STUB_LIBRARY|SYSTEM_DRIVER_MISMATCH)|cudaError(?:StubLibrary|"
        r"SystemDriverMismatch)|unsupported display driver / cuda driver combination|"
        r"[Ff]ound no NVIDIA driver|NVIDIA driver (?:is )?not (?:installed|loaded|found)",
    ),
    # a device index beyond those visible (CUDA_VISIBLE_DEVICES, --device), a file the process
    # may not read, a hub that refuses the token: settings, not the engine
    (
        Cause.INVALID_ARGUMENT,
        3.5,
        r"invalid device ordinal|cudaErrorInvalidDevice\b|PermissionError|[Ee]rrno 13\]? "
        r"Permission denied|\b40[13] Client Error\b|couldn't connect to '?https?://huggingface"
        r"\.co|outgoing traffic has been disabled",
    ),
    # --- Ray ------------------------------------------------------------------------------------
    (
        Cause.NODE_LOST,
        3.0,
        r"NodeDiedError|node .{0,40}(?:died|dead|lost)|missed too many heartbeats|"
        r"marked (?:as )?dead|"
        # a cluster manager's report that a node failed or went away (Ray's GCS: "Node <id>
        # failed, reconstructing actors"; Kubernetes: "NodeNotReady"; Slurm: "NODE_FAIL")
        r"\b[Nn]ode [0-9a-f]{16,} failed\b|\bNodeNotReady\b|\bNODE_FAIL\b",
    ),
)

# Frames anywhere in a traceback cut before its exception that say what was being done: a
# capture, the KV cache's allocation, the process groups' set-up.
FRAMES: tuple[_Clue, ...] = _clues(
    (
        Cause.CUDA_GRAPH_CAPTURE,
        3.5,
        r"capture_model|_capture_cudagraphs|capture_cudagraph|capture_one_batch_size|"
        r"cuda_graph_runner|CudaGraphRunner|init_cuda_graphs|graph_runner\.capture|"
        r"torch/cuda/graphs\.py|register_graph_buffers|"
        # any engine's function that captures graphs: "in capture_graphs", "in _capture_all"
        r"\bin _*capture\w*$|\bin \w*_(?:cuda_?)?graphs?_?capture\w*$|\bin \w*cuda_?graphs?\w*$",
    ),
    (
        Cause.KV_POOL_OOM,
        3.5,
        r"initialize_from_config|\binitialize_cache\b|initialize_kv_cache|_allocate_kv_cache|"
        r"init_memory_pool|\b(?:key|value|kv)_buffer\b|KVCache\(|cache_engine\.py|"
        r"raise_if_cache_size_invalid|check_enough_kv_cache_memory|profile_max_num_token|"
        r"kv_cache_init|[/\\](?:kv_)?cache(?:_engine|_manager)?\.py\"|"
        r"^\s+(?:self\.)?(?:kv_)?cache\s*=\s*\w|"
        # any engine's function that sets up the KV cache: "in init_kv_cache", "KVCacheManager"
        r"\bin \w*kv_?cache\w*$|\bin (?:init|alloc|allocate|create|build)_\w*cache\w*$|"
        # the call that sets it up, in the code line of a frame: "self.init_kv_cache("
        r"\b(?:init|alloc|allocate|create|build)_\w*kv_?cache\w*\(|"
        r"KVCacheManager",
    ),
    (
        Cause.NCCL_ERROR,
        3.5,
        r"init_worker_distributed_environment|initialize_model_parallel|"
        r"init_distributed_environment|init_process_group|ensure_model_parallel_initialized|"
        r"PyNcclCommunicator|NCCL_CHECK|pynccl|ncclCommInit",
    ),
    (Cause.NCCL_ERROR, 1.5, r"\binit_device\b|init_\w*distributed"),
    # a server binding its listening socket (Rust's listeners, Python's socket under asyncio)
    (
        Cause.PORT_IN_USE,
        3.5,
        r"\b(?:TcpListener|UdpSocket|UnixListener|Server<[^>]*>(?:<[^>]*>)*)::bind\b|"
        r"[/\\]socket\.py\S*,? line \d+,? in bind$|"
        r"base_events\.py\S*,? line \d+,? in create_server$",
    ),
    # a benchmark client's request (vLLM's and SGLang's benchmark scripts, aiohttp, httpx)
    (
        Cause.BENCHMARK_ERRORS,
        3.5,
        r"backend_request_func\.py|benchmark_serving\.py|bench_serving\.py|"
        # llmperf's (ray-project/llmperf)
        r"token_benchmark\w*\.py|/llmperf/|"
        r"\bin async_request_\w+$|\bin _?send_request\w*$",
    ),
    # a kernel compiler building for this GPU (Triton's backends, PTX to cubin)
    (
        Cause.ARCH_UNSUPPORTED,
        3.0,
        r"triton/backends/\w+/compiler\.py|\bin make_cubin$|"
        r"\bin (?:_?compile_ptx|ptx_to_cubin)\w*$",
    ),
)

# The deepest code lines of such a traceback: the check, the lookup or the import that failed.
DEEPEST: tuple[_Clue, ...] = _clues(
    # a check whose name says it checks that the GPU (device, architecture) supports something
    (
        Cause.ARCH_UNSUPPORTED,
        2.5,
        r"(?i:\b_*(?:check|verify|validate|ensure|assert|is)_\w*(?:gpu|device|arch|capabilit|"
        r"hardware)\w*(?:support|compat|capab)\w*|\b_*(?:check|verify|validate|ensure)_\w*"
        r"(?:support|compat)\w*_(?:gpu|device|arch|hardware)\w*)",
    ),
    # the kernel compiler's build for this GPU was the last thing running
    (
        Cause.ARCH_UNSUPPORTED,
        2.5,
        r"triton/backends/\w+/compiler\.py|\bin make_cubin$|"
        r"\bin (?:_?compile_ptx|ptx_to_cubin)\w*$",
    ),
    (
        Cause.MODEL_UNSUPPORTED,
        2.5,
        r"_?get_model_architecture|resolve_model_cls|inspect_model_cls|_raise_for_unsupported|"
        r"get_model_cls_by_arch|ModelRegistry\.|get_model_class|configuration_auto\.py|"
        r"models/__init__\.py\S*,? line \d+,? in get_model\b|"
        r"CONFIG_MAPPING\[",
    ),
    (
        Cause.INVALID_ARGUMENT,
        2.5,
        r"arg_utils\.py|server_args\.py|create_engine_config|create_model_config|_verify_args|"
        r"check_server_args|from_cli_args|parse_args\(|validate_python",
    ),
    (
        Cause.IMPORT_ERROR,
        2.5,
        r"^\s*(?:from [\w.]+ import |import [\w.]+)|_find_and_load|_gcd_import|import_module\(",
    ),
)

# The deepest code lines of a traceback cut before its exception, read with DEEPEST: there,
# with no exception to say why, what was running says it too. The device allocator, or the
# largest dummy batch run to measure peak memory, was the last thing running: an allocation
# failed (a traceback that ends in its exception says why, whatever frames it went through).
CUT_DEEPEST: tuple[_Clue, ...] = (
    *DEEPEST,
    *_clues(
        (
            Cause.CUDA_OOM,
            3.0,
            r"caching_allocator|CachingAllocator|_cuda_\w*[Aa]lloc\w*|"
            r"\bin \w*(?:raw_)?malloc\w*$|cudaMalloc|\bin profile_run$|\.profile_run\(",
        ),
        # the deepest code line makes a new tensor (a workspace, a buffer): its memory
        (
            Cause.CUDA_OOM,
            3.0,
            r"^\s*(?:[\w.]+(?:, *[\w.]+)* *= *)?torch\.(?:empty|zeros|ones|full)\(",
        ),
        # the deepest code line is an assert statement: the check is what raised
        (Cause.ASSERTION, 3.0, r"^\s*assert\b"),
    ),
)

# Lines before the first failure: what the program was doing.
ACTIVITY: tuple[_Clue, ...] = _clues(
    (Cause.NCCL_ERROR, 2.0, r"\bNCCL\b|\bnccl\b|\bHCCL\b|pynccl|init_process_group|rendezvous"),
    (Cause.KV_POOL_OOM, 2.0, _CACHE + r"|# (?:GPU|CPU|cuda) blocks|Memory profiling"),
    (Cause.CUDA_GRAPH_CAPTURE, 2.5, r"[Cc]apturing|[Cc]apture cuda graph begin|cudagraph"),
)

# The phase the log had reached, when the exception itself is cut away: after the KV cache was
# sized, the pool's allocation or check is what fails.
PHASES: tuple[_Clue, ...] = _clues((Cause.KV_POOL_OOM, 1.0, r"^memory_pool$"))

# The exception's type: what it says before its message is read.
_TYPES: tuple[tuple[re.Pattern[str], Cause | None, float], ...] = tuple(
    (re.compile(p), cause, w)
    for p, cause, w in (
        (r"(?:ModuleNotFound|Import)Error$", Cause.IMPORT_ERROR, 3.5),
        (
            r"OutOfMemoryError$|OutOfMemory$|(?:NotEnough|Insufficient)Memory(?:Error|Exception)$",
            Cause.CUDA_OOM,
            3.0,
        ),
        (r"^MemoryError$", Cause.HOST_OOM, 3.5),
        # the engine lacks an implementation the model (or its mode) needs
        (r"NotImplementedError$", Cause.MODEL_UNSUPPORTED, 2.0),
        (r"AssertionError$", Cause.ASSERTION, 3.0),
        (
            r"ValidationError$|ArgumentError$|ArgumentTypeError$|ConfigError$|UsageError$|"
            r"BadParameter$|NoSuchOption$",
            Cause.INVALID_ARGUMENT,
            3.0,
        ),
        (r"FileNotFoundError$|NotADirectoryError$|IsADirectoryError$", Cause.INVALID_ARGUMENT, 2.5),
        (r"DistBackendError$|DistNetworkError$|DistStoreError$|NcclError$", Cause.NCCL_ERROR, 3.0),
        (r"TimeoutError$|Timeout$", None, 0.0),  # timeout words decide
    )
)
_RAISE = re.compile(r"^\s*raise (?:[\w]+\.)*([A-Z]\w*)\(")
# An exception raised while the exception of a raise statement was being built (its class
# called with the wrong arguments): the raise statement names the exception meant.
BUILDING_FAILED = re.compile(r"^TypeError: (?:\w+\.)*__init__\(\) (?:missing|takes|got)")
_EXC_TYPE = re.compile(
    r"^(?:[\w.]*[.:])?(?P<type>(?:[A-Z]\w*)?(?:Error|Exception|Exit|Failure|Failed|Timeout|"
    r"OutOfMemory))\b"
)
# Generic families: an internal check or a crash says *that* something failed; a more specific
# family named in the same words is the cause (an assertion that a file opens, a crash that
# runs out of memory).
# (A crash yields only to a decisive family: a collective's watchdog reporting an illegal memory
# access is still the crash.)
_GENERIC: dict[Cause | str, float] = {Cause.ASSERTION: 3.0, Cause.RUNTIME_CRASH: 3.5}
GENERIC = frozenset({Cause.ASSERTION, Cause.RUNTIME_CRASH})
# A failed assertion that refuses a pair of settings ("X is not supported with Y") is an
# assertion, not a refused argument: the engine's check of a combination (its hint says so),
# which a study blames on the pair, where `invalid_argument` would condemn one value alone.
_REFUSED_PAIR = re.compile(
    r"not (?:yet )?supported (?:with|when|together|in combination|for)|(?:cannot|can't|can not)"
    r" (?:be )?(?:used|combined|enabled|set) (?:together )?with|mutually exclusive|only "
    r"(?:supported|works|available|compatible) (?:with|when|for)|incompatible with|"
    r"requires? .{0,60}(?:to be )?(?:enabled|disabled|set)\b"
)

# Families that refine another: when the refining one scores nearly as high, it is named (an
# out-of-memory in the KV cache's words is the cache's; a crash during a capture is the
# capture's).
REFINES: dict[Cause, frozenset[Cause]] = {
    Cause.CUDA_OOM: frozenset({Cause.KV_POOL_OOM, Cause.HOST_OOM, Cause.CUDA_GRAPH_CAPTURE}),
    Cause.RUNTIME_CRASH: frozenset(
        {Cause.CUDA_GRAPH_CAPTURE, Cause.ARCH_UNSUPPORTED, Cause.CUDA_OOM, Cause.HOST_OOM}
    ),
    Cause.STARTUP_TIMEOUT: frozenset({Cause.CUDA_GRAPH_CAPTURE}),
}

# When two families score the same, the more specific one is named.
FAMILY_ORDER: tuple[Cause, ...] = (
    Cause.CUDA_GRAPH_CAPTURE,
    Cause.KV_POOL_OOM,
    Cause.PORT_IN_USE,
    Cause.ARCH_UNSUPPORTED,
    Cause.MODEL_UNSUPPORTED,
    Cause.IMPORT_ERROR,
    Cause.HOST_OOM,
    Cause.CUDA_OOM,
    Cause.INVALID_ARGUMENT,
    Cause.WATCHDOG_TIMEOUT,
    Cause.STARTUP_TIMEOUT,
    Cause.NCCL_ERROR,
    Cause.NODE_LOST,
    Cause.GPU_NOT_CLEAN,
    Cause.BENCHMARK_ERRORS,
    Cause.ASSERTION,
    Cause.RUNTIME_CRASH,
)

# Crash signals: a line that says a process died of a signal or failed a check is a failure,
# whatever level (if any) its logger gave it.
_FATAL_SIGN = re.compile(
    r"[Ss]ignal \(?\d+\)? received|[Cc]aught signal \d+|received signal SIG[A-Z]+|"
    r"\b[Ss]egfault\b|"
    r"\*\*\* (?:Process )?received signal|Segmentation fault|SIGSEGV|core dumped|"
    r"GGML_ASSERT|(?i:assertion)\b.{0,200}(?i:fail)|(?:^|[\s\]|])Killed\s*$|Watchdog caught|"
    r"panicked at|^panic: |terminate called|Fatal Python error|code=killed|status=9/KILL|"
    r"invoked oom-killer|Out of memory: Kill|killed as a result of limit of|"
    r"(?i:exit ?code)[:= ]+(?:137|-9)\b|"
    r"result 'oom-kill'|"
    # a signal that ended a process, in words ("received signal 9", "killed by signal SIGABRT"),
    # not the stop that teardown sends (SIGTERM, SIGINT)
    r"(?i:received|caught|got|by|exited:?|killed|terminated|died)(?: \w+){0,2} "
    r"(?i:signal):? ?(?!(?:15|2)\b|SIGTERM|SIGINT)(?:\d+|SIG[A-Z]+)\b|"
    # a non-zero exit status in words (not a stop's 143/-15 or an interrupt's 130/-2)
    r"(?i:exit(?:ed)?(?: with)?(?: exit)? ?(?:status|code)|return ?code|returncode)[:= (]+"
    r"(?!(?:-?0|-15|143|-2|130)\b)-?\d+\b|(?i:non-zero exit)|\bstatus=[1-9]\d*/[A-Z]+|"
    # an abort reported on its own line (SIGABRT), as a shell reports a kill
    r"(?:^|[\s\]|])Aborted\s*$|"
    # a shell's report of how its job ended ("zsh: abort  ./server", "zsh: killed  python")
    r"^" + _SHELL_JOB + r"(?:abort(?:ed)?|segmentation fault|killed|bus error|"
    r"illegal (?:hardware )?instruction|floating point exception)\b|"
    # a signal handler's crash report, the kernel's report of a GPU fault, a Windows status
    r"^\s*(?:\[[^\]]*\] )?Signal code: |Failing at address|VM_L2_PROTECTION_FAULT|"
    r"amdgpu\b.{0,80}\bpage fault|NVRM: Xid|(?i:exit (?:status|code))[:= ]+0x[0-9a-fA-F]{8}\b|"
    r": command not found\b|"
    # a C++ runtime's report of an uncaught exception (libc++; libstdc++'s is above), a
    # canonical status code (absl, gRPC, XLA) opening a line
    r"terminating (?:due to|with) uncaught exception|^(?:INTERNAL|UNIMPLEMENTED|"
    r"FAILED_PRECONDITION|NOT_FOUND|UNAVAILABLE|ABORTED|DATA_LOSS|DEADLINE_EXCEEDED|"
    r"PERMISSION_DENIED|OUT_OF_RANGE|RESOURCE_EXHAUSTED|INVALID_ARGUMENT|UNKNOWN): \S"
)


def decisive(text: str) -> bool:
    """Whether ``text`` names a family decisively (a clue of weight 3 or more in its words)."""
    head = text[:600]
    return bool(_DECISIVE_ANY.search(head)) and bool(_named_decisively(head))


@lru_cache(maxsize=1 << 14)
def _named_decisively(head: str) -> frozenset[Cause | str]:
    """The families a clue of weight 3 or more names in ``head``. Cached: a log's lines are
    read again in each pass over it, and the same lines recur across one engine's logs."""
    return frozenset(c.family for c in WORDS if c.weight >= 3.0 and c.regex.search(head))


# A cheap first look: the words every decisive clue needs one of (most lines have none).
_DECISIVE_ANY = re.compile(
    r"(?i)memory|oom|alloc|cache|kill|cgroup|kernel|ptx|arch|capabilit|sigill|illegal|signal|"
    r"support|only|driver|toolchain|incompatible|sm_|model|tensor|module|symbol|shared|dll|"
    r"glibc|version|library|import|package|install|error|usage|valid|option|argument|divisib|"
    r"exclusive|repo|identifier|address|errno|eaddr|addrinuse|bind|listen|port|nccl|hccl|mpi|"
    r"completion|transport|watchdog|timeout|timed out|heartbeat|worker|client|rank|store|"
    r"rendezvous|barrier|peer|collective|start|ready|init|boot|health|warm|captur|graph|assert|"
    r"check|fault|sigsegv|sigbus|sigabrt|sigfpe|core dumped|fatal|panick|terminate|exception|"
    r"probability|double free|corrupted|launch|cublas|exhausted|tried|exit|busy|acquire|"
    r"unbalanced|usage of each|allocated|panic|gfx|runtime|loader|linker|field|variant|given|"
    r"fail|token|blocks|abort"
)


def names(text: str, family: Cause) -> bool:
    """Whether ``text`` names ``family`` decisively."""
    return family in _named_decisively(text[:600])


def fatal_sign(text: str) -> bool:
    """Whether ``text`` says a process died of a signal, failed a check or was killed."""
    return bool(_FATAL_SIGN.search(text[:400]))


@dataclass(frozen=True)
class Focus:
    """One line the family is read from.

    Attributes:
        index: its index in the log (the evidence the answer rests on).
        text: the message, without prefixes.
        weight: how much the line tells (``EXCEPTION_LINE`` ... ``CONTEXT_LINE``).
        raw: the line as written, read too (a prefix may hold words: ``[Errno 98]``).
        kind: ``message`` (words), ``frame`` (frame names), ``deepest`` (the last code lines
            of the traceback that ends in the exception), ``cut`` (those of a traceback cut
            before its exception), ``context`` (activity words) or ``phase`` (the phase reached,
            its name as text).
    """

    index: int
    text: str
    weight: float
    kind: str = "message"
    raw: str = ""


@dataclass(frozen=True)
class Verdict:
    """The family named, the line that weighed most and how clearly it won."""

    cause: Cause
    at: int
    score: float
    runner_up: float


_TAG = re.compile(r"\[[^\[\]]{1,80}\]")


def _exception_type(text: str) -> str | None:
    found = _EXC_TYPE.match(text.strip())
    return found.group("type") if found else None


# A dump of settings: many "key=value" (or "'key': value") pairs in one line
_SETTING = re.compile(r"(?:\b[a-z_][a-z0-9_]*=|'[a-z_][a-z0-9_]*': )")
DUMPED_SETTINGS = 8


def _before_dump(text: str) -> str:
    """``text`` up to the settings it dumps, if it dumps many: names of settings
    (``trust_remote_code=False``, ``mem_fraction_static=0.9``) complain of nothing."""
    found = list(_SETTING.finditer(text))
    return text[: found[0].start()] if len(found) >= DUMPED_SETTINGS else text


def _line_scores(focus: Focus) -> Mapping[Cause | str, float]:
    """The best clue weight of each family in one line."""
    heads = [_before_dump(focus.text[:600]) if focus.kind == "message" else focus.text[:600]]
    if focus.raw and focus.raw != focus.text:
        # Words a bracketed prefix holds ("[Errno 98]", "[TensorRT-LLM][ERROR]"), not the
        # dress around them (a host name, a timestamp), which must not change an answer.
        end = focus.raw.rfind(focus.text) if focus.text else -1
        prefix = focus.raw[:end] if end >= 0 else focus.raw
        tags = _TAG.findall(prefix)
        if tags:
            heads.append(" ".join(tags) + " " + heads[0])
    if "', '" in heads[0]:  # a message given as a tuple of strings: read it joined
        heads.append(heads[0].replace("', '", ""))
    return _head_scores(focus.kind, tuple(heads))


# The clues read in each kind of line (``Focus.kind``).
_TABLES: dict[str, tuple[_Clue, ...]] = {
    "message": WORDS,
    "frame": FRAMES,
    "deepest": DEEPEST,
    "cut": CUT_DEEPEST,
    "context": ACTIVITY,
    "phase": PHASES,
}


@lru_cache(maxsize=1 << 14)
def _head_scores(kind_of_line: str, heads: tuple[str, ...]) -> Mapping[Cause | str, float]:
    # Cached as ``decisive``'s reading is (an answer shared, so read-only); ``heads``: the
    # line's words as read, the first the message itself.
    table = _TABLES[kind_of_line]
    head = heads[0]
    best: dict[Cause | str, float] = {}
    for clue in table:
        if clue.weight > best.get(clue.family, 0.0) and any(clue.regex.search(h) for h in heads):
            best[clue.family] = clue.weight
    if kind_of_line == "message":
        raised = _RAISE.match(head)
        kind = raised.group(1) if raised is not None else _exception_type(head)
    else:
        # the deepest frame's raise statement names the exception meant ("raise ConfigError(")
        raised = _RAISE.match(head) if kind_of_line in ("deepest", "cut") else None
        kind = raised.group(1) if raised is not None else None
    for regex, cause, weight in _TYPES if kind else ():
        if cause is not None and regex.search(kind or ""):
            best[cause] = max(best.get(cause, 0.0), weight)
    # A generic family yields to a specific one named in the same words.
    # Within one line, a more specific memory family is the one meant, and a model the engine
    # refuses in its own words ("weight X does not exist") is not a bad path.
    for narrow, broad, least in (
        (Cause.KV_POOL_OOM, Cause.CUDA_OOM, 3.0),
        (Cause.HOST_OOM, Cause.CUDA_OOM, 3.0),
        (Cause.MODEL_UNSUPPORTED, Cause.INVALID_ARGUMENT, 3.5),
        # a collective that failed because memory ran out failed for that reason
        (Cause.CUDA_OOM, Cause.NCCL_ERROR, 3.0),
        # a collective a watchdog found never completed: the ranks hung, whatever the line's
        # process-group words
        (Cause.WATCHDOG_TIMEOUT, Cause.NCCL_ERROR, 3.5),
    ):
        if best.get(narrow, 0.0) >= least:
            best.pop(broad, None)
    for family, yields_to in _GENERIC.items():
        if family in best and any(w >= yields_to for f, w in best.items() if f not in _GENERIC):
            del best[family]
    return best


@dataclass(frozen=True)
class _Score:
    total: float  # the family's score over the lines
    at: int  # the line that weighed most
    decisive_at: int | None  # a message line holding a decisive clue of the family, if any


def scores(lines: Sequence[Focus], *, running: bool) -> dict[Cause, tuple[float, int]]:
    """Per family, its score over ``lines`` and the index of the line that weighed most.

    Args:
        lines: the lines to read, with their weights.
        running: the server was ready (or serving) when it failed: timeout words then name a
            watchdog, else a start-up timeout.
    """
    return {cause: (s.total, s.at) for cause, s in _scores(lines, running=running).items()}


def _scores(lines: Sequence[Focus], *, running: bool) -> dict[Cause, _Score]:
    """Per family, its score over ``lines`` and the index of the line that weighed most.

    Args:
        lines: the lines to read, with their weights.
        running: the server was ready (or serving) when it failed: timeout words then name a
            watchdog, else a start-up timeout.
    """
    total: dict[Cause, float] = {}
    by_kind: dict[tuple[str, Cause], float] = {}
    best_line: dict[Cause, tuple[float, int]] = {}
    decisive_at: dict[Cause, int] = {}
    unique: dict[tuple[int, str], Focus] = {}
    for focus in lines:  # a line read twice counts once, at its highest weight
        key = (focus.index, focus.kind)
        if key not in unique or unique[key].weight < focus.weight:
            unique[key] = focus
    for focus in unique.values():
        for family, weight in _line_scores(focus).items():
            if family == _TIMEOUT:
                cause = Cause.WATCHDOG_TIMEOUT if running else Cause.STARTUP_TIMEOUT
            elif family == _TOO_LONG:
                if not running:
                    continue
                cause = Cause.BENCHMARK_ERRORS
            else:
                assert isinstance(family, Cause)
                cause = family
            if focus.kind == "message" and weight >= DECISIVE and cause not in decisive_at:
                decisive_at[cause] = focus.index
            gained = focus.weight * weight
            cap = CAPS.get(focus.kind)
            if cap is not None:
                before = by_kind.get((focus.kind, cause), 0.0)
                gained = max(0.0, min(gained, cap - before))
                by_kind[(focus.kind, cause)] = before + gained
            if gained <= 0.0:
                continue
            total[cause] = total.get(cause, 0.0) + gained
            if gained > best_line.get(cause, (0.0, -1))[0]:
                best_line[cause] = (gained, focus.index)
    return {
        cause: _Score(score, best_line[cause][1], decisive_at.get(cause))
        for cause, score in total.items()
    }


# A kill in words that say nothing of memory: SIGKILL's marks, as a shell, a launcher or Go
# reports them. After a failure it is the engine (or its launcher) ending its own group.
_KILL_WORDS = re.compile(
    r"(?:^|[\s\]|])Killed\s*$|\bSIGKILL\b|\bsignal:? ?9\b|[Ss]ignal: killed|code[:= ]-9\b|"
    r"(?i:exit(?:ed)?[ _]?(?: with)?(?: status| ?code)?)[:= ]+(?:137|-9)\b"
)
_MEMORY_WORDS = re.compile(r"(?i:memory|\boom|alloc|RAM\b)")


def _echo_kill(text: str) -> bool:
    """Whether ``text`` reports a kill and nothing of memory."""
    head = text[:600]
    return bool(_KILL_WORDS.search(head)) and not _MEMORY_WORDS.search(head)


def name_family(lines: Sequence[Focus], *, running: bool) -> Verdict | None:
    """The family ``lines`` name, or None when none scores enough to decide.

    A generic family (a crash, a failed check) yields to a specific family named decisively
    in a message; a broad family yields to one that refines it (``REFINES``) with a score of
    at least ``REFINE``: a crash that also names the capture it happened in is the capture's,
    an out-of-memory raised in the KV cache's frames is the cache's.
    """
    found = _scores(lines, running=running)
    if not found:
        return None
    order = {cause: n for n, cause in enumerate(FAMILY_ORDER)}
    ranked = sorted(
        found.items(), key=lambda item: (-round(item[1].total, 6), order.get(item[0], len(order)))
    )
    cause, best = ranked[0]
    runner_up = ranked[1][1].total if len(ranked) > 1 else 0.0
    if best.total < DECIDES:
        return None
    asserted = found.get(Cause.ASSERTION)
    texts = {focus.index: focus.text for focus in lines}
    pair = (
        asserted is not None
        and asserted.decisive_at is not None
        and bool(_REFUSED_PAIR.search(texts.get(asserted.decisive_at, "")[:600]))
    )
    if cause == Cause.INVALID_ARGUMENT and pair:
        assert asserted is not None and asserted.decisive_at is not None
        return Verdict(
            cause=Cause.ASSERTION,
            at=asserted.decisive_at,
            score=asserted.total,
            runner_up=best.total,
        )
    if cause == Cause.RUNTIME_CRASH and asserted is not None and asserted.decisive_at is not None:
        # A crash that follows a failed check is that check's abort ("GGML_ASSERT(...) failed"
        # then "Aborted (core dumped)"): the check is the first fatal event. A kernel's own
        # assert that names the crash in the same line stays a crash.
        check = texts.get(asserted.decisive_at, "")
        crash_at = best.decisive_at if best.decisive_at is not None else best.at
        if asserted.decisive_at < crash_at and not names(check, Cause.RUNTIME_CRASH):
            return Verdict(
                cause=Cause.ASSERTION,
                at=asserted.decisive_at,
                score=asserted.total,
                runner_up=best.total,
            )
    if cause in GENERIC:
        # A crash or a failed check says *that* it failed; a specific family named decisively
        # in the same message (``what(): ... out of memory``, the line after a panic) says why.
        # A kill after it is its echo (an engine ending its own group), not why.
        failed_at = best.decisive_at if best.decisive_at is not None else best.at
        ranked = [
            (c, s)
            for c, s in ranked
            if c == cause
            or not _echo_kill(texts.get(s.decisive_at if s.decisive_at is not None else s.at, ""))
            or (s.decisive_at if s.decisive_at is not None else s.at) < failed_at
        ]
        specific = [
            (c, s)
            for c, s in ranked
            if c not in GENERIC
            and s.decisive_at is not None
            and not (cause == Cause.ASSERTION and c == Cause.INVALID_ARGUMENT and pair)
        ]
        if specific:
            other, score = specific[0]
            assert score.decisive_at is not None
            return Verdict(
                cause=other, at=score.decisive_at, score=score.total, runner_up=best.total
            )
    refining = [
        (c, s) for c, s in ranked[1:] if c in REFINES.get(cause, frozenset()) and s.total >= REFINE
    ]
    if refining:
        # The frames or the activity say which kind of out-of-memory or crash it was: an
        # allocation in the KV cache's frames is the cache's, a crash in a capture the capture's.
        other, score = refining[0]
        return Verdict(cause=other, at=score.at, score=score.total, runner_up=best.total)
    return Verdict(cause=cause, at=best.at, score=best.total, runner_up=runner_up)
