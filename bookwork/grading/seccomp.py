"""The system calls a sandbox refuses: a seccomp filter, as container runtimes use by default.

The namespaces of the sandbox (:mod:`bookwork.grading.sandbox`) give a submission its own view of
files, processes and the network. Some of the kernel is not namespaced at all, and a
process that reaches it can leave something behind for the next submission or read what
another left: above all the kernel's **keyring** (``add_key``, ``request_key``,
``keyctl``), which keeps a key per user id across processes; Docker's default seccomp
profile refuses these three calls for that reason. The same profile refuses the calls
that reach past a container (loading kernel modules, ``mount``, ``unshare`` and
``setns``, ``ptrace`` and reading another process's memory, ``bpf``,
``perf_event_open``, ``userfaultfd``, ``io_uring``, ``kexec``, ``reboot``, swap, quotas,
accounting, file handles); none of them is needed to run a notebook.

:func:`filter_program` writes the classic BPF program the kernel runs on every system
call of the sandbox: it answers ``EPERM`` for the calls of :data:`REFUSED` and for
every call made through another architecture's entry (a 32-bit call on a 64-bit
machine has other numbers, so a filter that knows only the native ones would let it
through), and allows the rest. bubblewrap installs it (``--seccomp FD``) after it has
built the sandbox and before it starts the program, so it holds for every process
inside. The numbers are the kernel's (``arch/x86/entry/syscalls/syscall_64.tbl``;
``include/uapi/asm-generic/unistd.h`` for aarch64).
"""
from __future__ import annotations

import errno
import platform
import struct

#: The system calls refused, by name.
REFUSED = ("add_key", "request_key", "keyctl", "bpf", "perf_event_open", "userfaultfd", "ptrace",
           "process_vm_readv", "process_vm_writev", "kcmp", "unshare", "setns", "mount", "umount2", "pivot_root",
           "open_by_handle_at", "name_to_handle_at", "kexec_load", "kexec_file_load", "init_module",
           "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl",
           "io_uring_setup", "io_uring_enter", "io_uring_register", "fsopen", "fsmount", "move_mount",
           "open_tree", "lookup_dcookie")

#: System call numbers by architecture (as ``uname -m`` names it).
NUMBERS = {
    "x86_64": {"add_key": 248, "request_key": 249, "keyctl": 250, "bpf": 321, "perf_event_open": 298,
               "userfaultfd": 323, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
               "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
               "open_by_handle_at": 304, "name_to_handle_at": 303, "kexec_load": 246, "kexec_file_load": 320,
               "init_module": 175, "finit_module": 313, "delete_module": 176, "reboot": 169, "swapon": 167,
               "swapoff": 168, "acct": 163, "quotactl": 179, "io_uring_setup": 425, "io_uring_enter": 426,
               "io_uring_register": 427, "fsopen": 430, "fsmount": 432, "move_mount": 429, "open_tree": 428,
               "lookup_dcookie": 212},
    "aarch64": {"add_key": 217, "request_key": 218, "keyctl": 219, "bpf": 280, "perf_event_open": 241,
                "userfaultfd": 282, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272,
                "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41,
                "open_by_handle_at": 265, "name_to_handle_at": 264, "kexec_load": 104, "kexec_file_load": 294,
                "init_module": 105, "finit_module": 273, "delete_module": 106, "reboot": 142, "swapon": 224,
                "swapoff": 225, "acct": 89, "quotactl": 60, "io_uring_setup": 425, "io_uring_enter": 426,
                "io_uring_register": 427, "fsopen": 430, "fsmount": 432, "move_mount": 429, "open_tree": 428,
                "lookup_dcookie": 18},
}
#: ``AUDIT_ARCH_*`` of each architecture (``include/uapi/linux/audit.h``).
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
#: On x86_64, numbers with this bit set are the x32 entry, another architecture in effect.
X32_BIT = 0x40000000

# classic BPF (include/uapi/linux/filter.h, seccomp.h)
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_SECCOMP_RET_ALLOW, _SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
_NR, _ARCH = 0, 4  # offsets of the call's number and architecture in struct seccomp_data


def _instruction(code: int, jump_true: int, jump_false: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jump_true, jump_false, k)


def filter_program(machine: str | None = None) -> bytes:
    """The BPF program (``struct sock_filter[]``) that refuses :data:`REFUSED` with EPERM.

    Raises ``RuntimeError`` on an architecture whose numbers are not listed here: the
    grader then refuses to grade rather than run without the filter.
    """
    machine = machine or platform.machine()
    if machine not in NUMBERS:
        raise RuntimeError(f"no seccomp filter for the {machine} architecture (known: {', '.join(NUMBERS)})")
    refuse = _SECCOMP_RET_ERRNO | errno.EPERM
    numbers = sorted({NUMBERS[machine][name] for name in REFUSED})
    body = []
    if machine == "x86_64":  # the x32 entry: refused whole
        body.append(("jge", X32_BIT))
    body += [("jeq", number) for number in numbers]
    # layout: load arch; arch != native -> refuse; load nr; each test jumps to the refusal at the end
    program = [_instruction(_LD_W_ABS, 0, 0, _ARCH)]
    after_arch_test = 1 + len(body) + 1  # instructions between the arch test and the refusal
    program.append(_instruction(_JEQ_K, 0, after_arch_test, AUDIT_ARCH[machine]))
    program.append(_instruction(_LD_W_ABS, 0, 0, _NR))
    for position, (test, number) in enumerate(body):
        to_refusal = len(body) - position  # skip the rest of the tests and the allow
        program.append(_instruction(_JGE_K if test == "jge" else _JEQ_K, to_refusal, 0, number))
    program.append(_instruction(_RET_K, 0, 0, _SECCOMP_RET_ALLOW))
    program.append(_instruction(_RET_K, 0, 0, refuse))
    return b"".join(program)
