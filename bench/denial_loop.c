/* Work under a stream of refusals (issue 16's bench): for SECONDS, a fixed
 * unit of CPU work per iteration, and RATE times a second a syscall the
 * policy refuses (personality(0xffffffff), denied with EPERM). Prints the
 * work units done and the refusals made: the payload's own throughput. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s SECONDS RATE\n", argv[0]);
		return 2;
	}
	double seconds = atof(argv[1]), rate = atof(argv[2]);
	volatile unsigned long x = 88172645463325252UL;
	long units = 0, refusals = 0;
	double start = now(), next = start;
	for (;;) {
		for (int i = 0; i < 2000; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		units++;
		double t = now();
		if (t - start >= seconds)
			break;
		while (rate > 0 && t >= next) {
			syscall(SYS_personality, 0xffffffffL);
			refusals++;
			next += 1.0 / rate;
		}
	}
	printf("%ld %ld\n", units, refusals);
	return 0;
}
