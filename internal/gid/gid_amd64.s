//go:build !purego

#include "textflag.h"

// func Current() uintptr
TEXT ·Current(SB), NOSPLIT, $0-8
	MOVQ (TLS), AX
	MOVQ AX, ret+0(FP)
	RET

// func Held(ids *[2]uintptr) bool
TEXT ·Held(SB), NOSPLIT, $0-9
	MOVQ ids+0(FP), AX
	MOVQ (TLS), CX
	CMPQ CX, 0(AX)
	JEQ  yes
	CMPQ CX, 8(AX)
	SETEQ ret+8(FP)
	RET
yes:
	MOVB $1, ret+8(FP)
	RET
