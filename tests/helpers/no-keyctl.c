/* no-keyctl.c: run a command with the key syscalls refused, as a container's seccomp filter does. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* usage: no-keyctl ERRNO COMMAND [ARGS...]; ERRNO is ENOSYS or EPERM. */
int main(int argc, char *argv[])
{
	unsigned err;

	if (argc < 3) {
		fprintf(stderr, "usage: %s ENOSYS|EPERM COMMAND [ARGS...]\n", argv[0]);
		return 2;
	}
	err = strcmp(argv[1], "EPERM") == 0 ? EPERM : ENOSYS;

	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_keyctl, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_add_key, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_request_key, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
	};
	struct sock_fprog prog = {
		.len = sizeof(filter) / sizeof(filter[0]),
		.filter = filter,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		perror("no-keyctl: seccomp");
		return 2;
	}
	execvp(argv[2], argv + 2);
	perror("no-keyctl: exec");
	return 127;
}
