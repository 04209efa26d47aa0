/* Time one syscall in a loop inside a container: what a seccomp filter costs
 * the payload. `syscall_loop personality|getppid N` prints ns per call.
 * personality(0xffffffff) only queries the persona; podman's profile checks
 * its argument, so it takes the argument-checking path of the filter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s personality|getppid N\n", argv[0]);
		return 2;
	}
	long n = atol(argv[2]);
	long nr = !strcmp(argv[1], "personality") ? SYS_personality : SYS_getppid;
	long arg = nr == SYS_personality ? 0xffffffffL : 0;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		syscall(nr, arg);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
	printf("%.1f\n", ns / n);
	return 0;
}
