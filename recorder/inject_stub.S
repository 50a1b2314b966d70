/* SPDX-License-Identifier: MIT */
/* The injection stub: position-independent code the recorder copies into the target, with the
 * data page it reads (recorder/inject_abi.h). Nothing here runs in a thread the recorder
 * stopped. A GOT entry of one of the target's allocator calls is pointed at a trampoline
 * entry; the first thread of the target that calls through it is at a known safe point (in
 * its own code, about to call the allocator, holding no allocator or loader lock), and there
 * it starts a detached thread of ours, then goes on to the allocator it called. That thread
 * loads libheapsnap.so with dlopen and calls its entry, which does the rest. */
#include "inject_abi.h"

	.section .rodata.hs_stub, "a"
	.balign 4096
	.globl hs_stub_blob
	.globl hs_stub_tramp
	.globl hs_stub_tramp_end
hs_stub_blob:
hs_stub_tramp:
	/* One 16-byte entry per GOT entry taken over: the original target in r11, which the
	 * ABI lets a callee clobber. */
	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.balign 16
	movq data + HS_INJ_OFF_SLOTS + \i * 16 + 8(%rip), %r11
	jmp common
	.endr
	.balign 16
hs_stub_tramp_end:

common:
	/* The allocator's arguments survive; the stack is 16-aligned for the calls below. */
	push %r11
	push %rdi
	push %rsi
	push %rdx
	push %rcx
	push %r8
	push %r9
	push %rax
	sub $8, %rsp
	/* Taken already, or not armed yet: one load, until the library's own entries replace ours. */
	cmpq $0, data + HS_INJ_OFF_FIRED(%rip)
	jne 1f
	/* Only the target itself: a fork child has a copy of this page, not the recorder. */
	mov $39, %eax /* getpid */
	syscall
	cmp data + HS_INJ_OFF_TARGET_PID(%rip), %rax
	jne 1f
	xor %eax, %eax /* HS_FIRED_ARMED */
	mov $HS_FIRED_TAKEN, %ecx
	lock cmpxchgq %rcx, data + HS_INJ_OFF_FIRED(%rip)
	jne 1f
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
	mov %rax, data + HS_INJ_OFF_CREATE_RET(%rip)
	movq $HS_FIRED_CREATED, data + HS_INJ_OFF_FIRED(%rip)
1:
	add $8, %rsp
	pop %rax
	pop %r9
	pop %r8
	pop %rcx
	pop %rdx
	pop %rsi
	pop %rdi
	pop %r11
	jmp *%r11

/* The thread of our own: dlopen, dlsym, the entry; on failure dlerror's text is copied to
 * the data page, since the thread and its dlerror buffer are gone when the recorder looks. */
loader:
	push %rbx
	mov %rdi, %rbx
	lea HS_INJ_OFF_LIB_PATH(%rbx), %rdi
	mov HS_INJ_OFF_DLOPEN_FLAGS(%rbx), %rsi
	call *HS_INJ_OFF_FN_DLOPEN(%rbx)
	test %rax, %rax
	jz 2f
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
