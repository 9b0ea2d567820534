/*
 * jail/seccomp_bpf_stub.c: jail_seccomp_bpf() for jail_seccomp_gen itself, which makes the
 * real one (seccomp.c's export is linked into the generator but never called there).
 */
#include "jail/jail_internal.h"

const unsigned char *jail_seccomp_bpf(size_t *len)
{
	*len = 0;
	return NULL;
}
