//go:build !purego

#include "textflag.h"

// func Current() uintptr
TEXT ·Current(SB), NOSPLIT, $0-8
	MOVD g, R0
	MOVD R0, ret+0(FP)
	RET

// func Held(ids *[2]uintptr) bool
TEXT ·Held(SB), NOSPLIT, $0-9
	MOVD ids+0(FP), R0
	MOVD 0(R0), R1
	CMP  g, R1
	BEQ  yes
	MOVD 8(R0), R1
	CMP  g, R1
	BEQ  yes
	MOVB ZR, ret+8(FP)
	RET
yes:
	MOVD $1, R2
	MOVB R2, ret+8(FP)
	RET
