/* SPDX-License-Identifier: MIT */
/* The injection stub: position-independent code the recorder copies into the target, with the
 * data page it reads (common/abi/inject_abi.h). Nothing here runs in a thread the recorder
 * stopped but hs_stub_idle, in a thread it stopped in an idle wait. A GOT entry of one of the target's allocator calls is pointed at a trampoline
 * entry; the first thread of the target that calls through one is at a known safe point (in
 * its own code, about to call the allocator, holding no allocator or loader lock), and there
 * it starts a detached thread of ours, which loads libheapsnap.so with dlopen and calls its
 * entry, which does the rest.
 *
 * Every thread of the target that calls through the trampoline meanwhile (the first one too)
 * waits there until the library opens the gate (its hooks are in place), then goes on to
 * what its GOT entry holds NOW: the hook, so that the call is recorded. The wait is bounded
 * (hold_ns after the first call, futex on the gate): a thread of the target may hold a lock
 * the loader needs (it is inside dlopen, or a fork handler), and the loader must not wait on
 * it for ever. The loader thread never waits, nor does a fork child (its pid is not the
 * target's: the library is not loaded there). A call that goes on to the allocator
 * unrecorded while the injection is under way is counted in `passed` (the data is mapped
 * shared, so that a fork child's count is seen too), which the recorder reports. */
#include "abi/inject_abi.h"

#define SYS_getpid 39
#define SYS_gettid 186
#define SYS_futex 202
#define SYS_clock_gettime 228
#define SYS_sched_setaffinity 203
#define SYS_sched_getaffinity 204
#define SYS_getcpu 309
#define FUTEX_WAIT_PRIVATE 128
#define FUTEX_WAKE_PRIVATE 129
#define CLOCK_MONOTONIC 1
/* Where the slot index (then the address to go on to) is on the stack, in common. */
#define SAVED_SLOT 80

	.section .rodata.hs_stub, "a"
	.balign 4096
	.globl hs_stub_blob
	.globl hs_stub_tramp
	.globl hs_stub_tramp_end
hs_stub_blob:
hs_stub_tramp:
	/* One 16-byte entry per GOT entry taken over: its slot's index in r11, which the ABI
	 * lets a callee clobber. */
	.set slot, 0
	.rept HS_INJ_MAX_SLOTS
	.balign 16
	mov $slot, %r11d
	jmp common
	.set slot, slot + 1
	.endr
	.balign 16
hs_stub_tramp_end:

common:
	/* The allocator's arguments survive; the stack is 16-aligned for the calls below, with
	 * 16 bytes at (%rsp) for a timespec and a flag at 16(%rsp). */
	push %r11
	push %rdi
	push %rsi
	push %rdx
	push %rcx
	push %r8
	push %r9
	push %rax
	sub $24, %rsp
	/* Counted until the thread is out (and whatever it called has returned): the recorder
	 * unmaps the stub of an injection that gave up only when none is in it. */
	lock incq data + HS_INJ_OFF_INFLIGHT(%rip)
	mov SAVED_SLOT(%rsp), %rax
	lea data + HS_INJ_OFF_SLOT_KIND(%rip), %rcx
	cmpb $HS_SLOT_ALLOC, (%rcx,%rax)
	jne .Lsafe_point
	/* Disarmed: the injection gave up; not armed yet: it has not begun. Nothing to count. */
	cmpq $HS_FIRED_UNARMED, data + HS_INJ_OFF_FIRED(%rip)
	je .Lorig
	cmpq $HS_FIRED_PREARM, data + HS_INJ_OFF_FIRED(%rip)
	je .Lcall
	/* Only the target itself: a fork child has the same page, not the library. */
	mov $SYS_getpid, %eax
	syscall
	cmp data + HS_INJ_OFF_TARGET_PID(%rip), %rax
	jne .Lcount
	/* The loader's own calls are not the target's; nor are those pthread_create makes for
	 * it in the thread that starts it (the loader thread's TLS), which would otherwise wait
	 * here for a gate that only that thread's return opens. */
	mov $SYS_gettid, %eax
	syscall
	cmp data + HS_INJ_OFF_LOADER_TID(%rip), %rax
	je .Lorig
	cmp data + HS_INJ_OFF_FIRING_TID(%rip), %rax
	je .Lorig
	/* The dynamic loader's calls neither start the loader nor wait: it makes them holding
	 * its locks (a thread that exits frees its TLS under the stack list's lock, which
	 * pthread_create takes; one created late grows its dtv under the TLS lock, which dlopen
	 * takes), so that a wait there is the loader thread's wait, until the deadline. It
	 * reaches them through the program's PLT entry when the executable has a canonical one
	 * for malloc or free (non-PIE: Debian's python3, node). On to the allocator, counted. */
	mov SAVED_SLOT + 8(%rsp), %rdx /* the caller's return address */
	cmp data + HS_INJ_OFF_LDSO_LO(%rip), %rdx
	jb 2f
	cmp data + HS_INJ_OFF_LDSO_HI(%rip), %rdx
	jb .Lldso
2:
	cmpq $HS_FIRED_ARMED, data + HS_INJ_OFF_FIRED(%rip)
	jne .Lhold
	xor %eax, %eax /* HS_FIRED_ARMED */
	mov $HS_FIRED_TAKEN, %ecx
	lock cmpxchgq %rcx, data + HS_INJ_OFF_FIRED(%rip)
	jne .Lhold
	call fire
	test %rax, %rax
	jnz .Lcount /* no loader */
.Lhold:
	movq $0, 16(%rsp)
.Lwait:
	cmpl $HS_GATE_CLOSED, data + HS_INJ_OFF_GATE(%rip)
	jne .Lopened
	movq $1, 16(%rsp) /* it waited */
	call now_ns
	mov data + HS_INJ_OFF_DEADLINE(%rip), %rdx
	test %rdx, %rdx
	jz .Lshort /* the first thread has not set it yet */
	cmp %rdx, %rax
	jae .Ltimeout
	sub %rax, %rdx
	mov %rdx, %rax
	xor %edx, %edx
	mov $1000000000, %ecx
	div %rcx
	mov %rax, 0(%rsp)
	mov %rdx, 8(%rsp)
	jmp .Lfutex
.Lshort:
	movq $0, 0(%rsp)
	movq $1000000, 8(%rsp)
.Lfutex:
	lea data + HS_INJ_OFF_GATE(%rip), %rdi
	mov $FUTEX_WAIT_PRIVATE, %esi
	mov $HS_GATE_CLOSED, %edx
	mov %rsp, %r10
	xor %r8d, %r8d
	xor %r9d, %r9d
	mov $SYS_futex, %eax
	syscall /* woken, timed out, interrupted or not closed any more: looked at again */
	jmp .Lwait
.Lopened:
	cmpq $0, 16(%rsp)
	je .Lcurrent
	lock incq data + HS_INJ_OFF_HELD(%rip)
.Lcurrent:
	/* The slot's GOT entry as it is now: the hook once the library is in; still the
	 * trampoline if the library did not take it over (or failed). */
	mov SAVED_SLOT(%rsp), %rax
	shl $4, %rax
	lea data + HS_INJ_OFF_SLOTS(%rip), %rcx
	mov (%rcx,%rax), %rdx
	mov (%rdx), %rdx
	lea hs_stub_blob(%rip), %rcx
	cmp %rcx, %rdx
	jb 1f
	lea data + HS_STUB_DATA_BYTES(%rip), %rcx
	cmp %rcx, %rdx
	jb .Lcount
1:
	mov %rdx, SAVED_SLOT(%rsp)
	jmp .Lgo
.Lldso:
	movq $0, 16(%rsp) /* it did not wait */
	cmpl $HS_GATE_CLOSED, data + HS_INJ_OFF_GATE(%rip)
	jne .Lopened /* the hooks are in: to them */
	jmp .Lcount
.Ltimeout:
	lock incq data + HS_INJ_OFF_TIMED_OUT(%rip)
.Lcount:
	/* On to the allocator unrecorded: counted, unless the session is over. */
	cmpl $HS_LIB_STATE_DETACHED, data + HS_INJ_OFF_LIB + HS_INJ_LIB_OFF_STATE(%rip)
	je .Lorig
	lock incq data + HS_INJ_OFF_PASSED(%rip)
	jmp .Lcall
.Lorig:
	mov SAVED_SLOT(%rsp), %rax
	shl $4, %rax
	lea data + HS_INJ_OFF_SLOTS(%rip), %rcx
	mov 8(%rcx,%rax), %rdx
	mov %rdx, SAVED_SLOT(%rsp)
.Lgo:
	lock decq data + HS_INJ_OFF_INFLIGHT(%rip)
	add $24, %rsp
	pop %rax
	pop %r9
	pop %r8
	pop %rcx
	pop %rdx
	pop %rsi
	pop %rdi
	pop %r11
	jmp *%r11

/* The original called (not jumped to), for what follows its return: an entry not bound yet
 * (lazy binding) holds the address of the module's PLT code, which binds the symbol and
 * writes the GOT entry, and the trampoline with it, over. While the injection is under way
 * and the library has not begun to rewrite entries, what the binder wrote becomes the slot's
 * original (the next call goes straight there: no binder again, whose write could race with
 * the library's) and the trampoline goes back in; a library that has begun keeps what it
 * finds (its hook, or what the binder wrote, as the original). A call made through the entry
 * by another thread between the binder's write and ours goes by uncounted: once per entry
 * bound lazily while the library loads.
 * The allocators take their arguments in registers only; the caller's return address stays
 * where it is, above our frame. */
.Lcall:
	mov SAVED_SLOT(%rsp), %rax
	shl $4, %rax
	lea data + HS_INJ_OFF_SLOTS(%rip), %rcx
	add %rcx, %rax
	mov %rax, 16(%rsp)
	mov 8(%rax), %r11
	mov 24(%rsp), %rax
	mov 32(%rsp), %r9
	mov 40(%rsp), %r8
	mov 48(%rsp), %rcx
	mov 56(%rsp), %rdx
	mov 64(%rsp), %rsi
	mov 72(%rsp), %rdi
	call *%r11
	mov %rax, 24(%rsp)
	cmpq $HS_FIRED_UNARMED, data + HS_INJ_OFF_FIRED(%rip)
	je 8f
	cmpl $HS_LIB_STATE_DETACHED, data + HS_INJ_OFF_LIB + HS_INJ_LIB_OFF_STATE(%rip)
	je 8f
	mov 16(%rsp), %rcx /* the slot */
	mov (%rcx), %rdx   /* its GOT entry */
	mov (%rdx), %rax   /* what it holds now */
	cmpl $0, data + HS_INJ_OFF_PATCHING(%rip) /* read after it: a hook there was seen */
	jne 8f
	lea hs_stub_blob(%rip), %r8
	cmp %r8, %rax
	jb 7f
	lea data + HS_STUB_DATA_BYTES(%rip), %r8
	cmp %r8, %rax
	jb 8f /* ours still */
7:
	mov %rax, 8(%rcx) /* the bound address, the original from now on */
	mov %rcx, %r8
	lea data + HS_INJ_OFF_SLOTS(%rip), %r9
	sub %r9, %r8
	lea hs_stub_tramp(%rip), %r9
	add %r9, %r8 /* the slot's trampoline entry: 16 bytes each, as the slots */
	lock cmpxchgq %r8, (%rdx)
8:
	lock decq data + HS_INJ_OFF_INFLIGHT(%rip)
	mov 24(%rsp), %rax
	add $SAVED_SLOT, %rsp
	add $8, %rsp
	ret

/* A safe point only (an entry of a call such as read or epoll_wait, which a process that
 * never calls its allocator through a GOT still makes while it idles): the loader is started
 * there as at an allocator call, but nothing waits and nothing is counted (it is no
 * allocation); always on to the original, jumped to (the call may block for long: no frame of
 * ours stays below it). An entry the lazy binder takes over meanwhile is only one chance
 * fewer. The library puts these entries back once its hooks are in place. */
.Lsafe_point:
	cmpq $HS_FIRED_ARMED, data + HS_INJ_OFF_FIRED(%rip)
	jne .Lorig
	mov $SYS_getpid, %eax
	syscall
	cmp data + HS_INJ_OFF_TARGET_PID(%rip), %rax
	jne .Lorig
	xor %eax, %eax /* HS_FIRED_ARMED */
	mov $HS_FIRED_TAKEN, %ecx
	lock cmpxchgq %rcx, data + HS_INJ_OFF_FIRED(%rip)
	jne .Lorig
	call fire
	jmp .Lorig

/* The first thread: the deadline of every wait, then the loader thread. Returns
 * pthread_create's result in rax; on failure the gate is opened (nobody is to wait). Called
 * with the stack 16-aligned; clobbers the caller-saved registers.
 * The loader thread is made on this thread's CPU: this thread pins itself there for the
 * pthread_create (the new thread inherits the mask) and puts its own mask back after, as
 * the loader does first thing. This thread then waits in the trampoline, and the loader,
 * just made (EEVDF gives it a half slice), runs next on the CPU it leaves: left free, the
 * scheduler put it on the other CPU of a loaded 2-core machine, behind what runs there, and
 * it started 2-4 ms after pthread_create in 4 attaches of 10. */
fire:
	sub $8, %rsp
	mov $SYS_gettid, %eax
	syscall
	mov %rax, data + HS_INJ_OFF_FIRING_TID(%rip)
	call now_ns
	add data + HS_INJ_OFF_HOLD_NS(%rip), %rax
	mov %rax, data + HS_INJ_OFF_DEADLINE(%rip)
	call pin_here
	lea data + HS_INJ_OFF_ATTR(%rip), %rdi
	call *data + HS_INJ_OFF_FN_ATTR_INIT(%rip)
	lea data + HS_INJ_OFF_ATTR(%rip), %rdi
	mov $1, %esi /* PTHREAD_CREATE_DETACHED */
	call *data + HS_INJ_OFF_FN_ATTR_DETACH(%rip)
	lea data + HS_INJ_OFF_THREAD(%rip), %rdi
	lea data + HS_INJ_OFF_ATTR(%rip), %rsi
	lea loader(%rip), %rdx
	lea data(%rip), %rcx
	call *data + HS_INJ_OFF_FN_PTHREAD_CREATE(%rip)
	cltq
	push %rax
	call now_ns
	mov %rax, data + HS_INJ_OFF_TIMES + 8 * HS_T_CREATED(%rip)
	call unpin
	pop %rax
	movq $0, data + HS_INJ_OFF_FIRING_TID(%rip)
	mov %rax, data + HS_INJ_OFF_CREATE_RET(%rip)
	movq $HS_FIRED_CREATED, data + HS_INJ_OFF_FIRED(%rip)
	test %rax, %rax
	jz 1f
	push %rax
	lea data + HS_INJ_OFF_GATE(%rip), %rdi
	call open_gate
	pop %rax
1:
	add $8, %rsp
	ret

/* This thread pinned to the CPU it runs on, its own mask kept (pinned set), if the recorder
 * allows it and every call works; else nothing changed. Clobbers rax, rcx, rdx, rsi, rdi,
 * r11. */
pin_here:
	cmpq $0, data + HS_INJ_OFF_PIN(%rip)
	je 9f
	mov $SYS_sched_getaffinity, %eax
	xor %edi, %edi
	mov $HS_CPU_MASK_BYTES, %esi
	lea data + HS_INJ_OFF_CPUS(%rip), %rdx
	syscall
	test %rax, %rax
	jle 9f /* an error, or nothing read */
	mov %rax, data + HS_INJ_OFF_CPUS_LEN(%rip)
	mov $SYS_getcpu, %eax
	lea data + HS_INJ_OFF_GETCPU(%rip), %rdi
	xor %esi, %esi
	xor %edx, %edx
	syscall
	test %rax, %rax
	jnz 9f
	mov data + HS_INJ_OFF_GETCPU(%rip), %ecx
	cmp $8 * HS_CPU_MASK_BYTES, %ecx
	jae 9f
	/* Its bit alone in the one-CPU mask (zero until now, and only ever this bit set). */
	mov %ecx, %eax
	shr $3, %eax
	and $7, %ecx
	mov $1, %edx
	shl %cl, %edx
	lea data + HS_INJ_OFF_CPU_ONE(%rip), %rsi
	orb %dl, (%rsi,%rax)
	mov $SYS_sched_setaffinity, %eax
	xor %edi, %edi
	mov $HS_CPU_MASK_BYTES, %esi
	lea data + HS_INJ_OFF_CPU_ONE(%rip), %rdx
	syscall
	test %rax, %rax
	jnz 9f
	movq $1, data + HS_INJ_OFF_PINNED(%rip)
9:
	ret

/* The calling thread's mask back to the first thread's own, if pin_here pinned it. Clobbers
 * rax, rcx, rdx, rsi, rdi, r11. */
unpin:
	cmpq $0, data + HS_INJ_OFF_PINNED(%rip)
	je 9f
	mov $SYS_sched_setaffinity, %eax
	xor %edi, %edi
	mov data + HS_INJ_OFF_CPUS_LEN(%rip), %rsi
	lea data + HS_INJ_OFF_CPUS(%rip), %rdx
	syscall
9:
	ret

/* CLOCK_MONOTONIC in ns, in rax; clobbers rcx, rdx, rsi, rdi, r11. */
now_ns:
	sub $24, %rsp
	mov $SYS_clock_gettime, %eax
	mov $CLOCK_MONOTONIC, %edi
	mov %rsp, %rsi
	syscall
	mov (%rsp), %rax
	imul $1000000000, %rax, %rax
	add 8(%rsp), %rax
	add $24, %rsp
	ret

/* The gate at rdi opened, and every thread waiting on it woken; clobbers rax, rcx, rdx, rsi,
 * r11. */
open_gate:
	movl $HS_GATE_OPEN, (%rdi)
	mov $FUTEX_WAKE_PRIVATE, %esi
	mov $0x7fffffff, %edx
	mov $SYS_futex, %eax
	syscall
	ret

/* The thread of our own: dlopen, dlsym, the entry; on failure dlerror's text is copied to
 * the data page, since the thread and its dlerror buffer are gone when the recorder looks. */
loader:
	push %rbx
	mov %rdi, %rbx
	mov $SYS_gettid, %eax
	syscall
	mov %rax, HS_INJ_OFF_LOADER_TID(%rbx)
	call now_ns
	mov %rax, HS_INJ_OFF_TIMES + 8 * HS_T_LOADER(%rbx)
	call unpin /* running now: free to go anywhere the first thread could */
	lea HS_INJ_OFF_LIB_PATH(%rbx), %rdi
	mov HS_INJ_OFF_DLOPEN_FLAGS(%rbx), %rsi
	call *HS_INJ_OFF_FN_DLOPEN(%rbx)
	test %rax, %rax
	jz 2f
	push %rax
	push %rax
	call now_ns
	mov %rax, HS_INJ_OFF_TIMES + 8 * HS_T_DLOPENED(%rbx)
	pop %rax
	pop %rax
	mov %rax, %rdi
	lea HS_INJ_OFF_ENTRY(%rbx), %rsi
	call *HS_INJ_OFF_FN_DLSYM(%rbx)
	test %rax, %rax
	jz 3f
	movq $HS_LOADER_CALLING, HS_INJ_OFF_LOADER_STATE(%rbx)
	mov %rbx, %rdi
	call *%rax
	movq $HS_LOADER_RETURNED, HS_INJ_OFF_LOADER_STATE(%rbx)
	jmp 5f
2:
	call errmsg
	movq $HS_LOADER_NO_LIB, HS_INJ_OFF_LOADER_STATE(%rbx)
	jmp 5f
3:
	call errmsg
	movq $HS_LOADER_NO_ENTRY, HS_INJ_OFF_LOADER_STATE(%rbx)
5:
	/* Whatever happened, nobody waits any longer (the library opened it already if it
	 * got that far). */
	lea HS_INJ_OFF_GATE(%rbx), %rdi
	call open_gate
	pop %rbx
	xor %eax, %eax
	ret

errmsg:
	sub $8, %rsp
	call *HS_INJ_OFF_FN_DLERROR(%rbx)
	add $8, %rsp
	test %rax, %rax
	jz 9f
	lea HS_INJ_OFF_DL_MSG(%rbx), %rdi
	mov $255, %ecx
7:
	movb (%rax), %dl
	movb %dl, (%rdi)
	test %dl, %dl
	jz 9f
	inc %rax
	inc %rdi
	dec %ecx
	jnz 7b
	movb $0, (%rdi)
9:
	ret

/* The loader started by a thread the recorder stopped in a wait (select, poll, read...)
 * made by a libc wrapper, called from the program: it holds no lock there, as at a
 * safe-point entry, which a process idle in one call for long never takes again (an idle
 * postmaster sits in select for a minute). Called on a stack of its own, 16-aligned; ends
 * at the int3, where the recorder puts the thread back in its wait. */
	.globl hs_stub_idle
	.globl hs_stub_idle_end
hs_stub_idle:
	xor %eax, %eax /* HS_FIRED_ARMED */
	mov $HS_FIRED_TAKEN, %ecx
	lock cmpxchgq %rcx, data + HS_INJ_OFF_FIRED(%rip)
	jne 1f
	call fire
1:
	int3
hs_stub_idle_end:

/* One store the recorder has a stopped thread make: a GOT entry is 8 aligned bytes, and a
 * single mov writes them whole, where a copy through /proc/PID/mem promises no such thing. */
	.globl hs_stub_store
hs_stub_store:
	mov %rsi, (%rdi)
	int3

	.globl hs_stub_code_end
hs_stub_code_end:
	.org hs_stub_blob + HS_STUB_CODE_BYTES
data:
	.skip HS_STUB_DATA_BYTES

	.section .note.GNU-stack, "", @progbits
