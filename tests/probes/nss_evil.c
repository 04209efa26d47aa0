/*
 * nss_evil: an image's NSS module (libnss_evil.so.2, named by the image's
 * /etc/nsswitch.conf as "passwd: evil"), for sandboy's escape suite.
 *
 *   gcc -shared -fPIC -O2 -Wall -o libnss_evil.so.2 nss_evil.c
 *
 * If a runtime looks a user up with glibc inside the container (HOME for a
 * spec without it) before it confines the process, glibc loads this file
 * and its constructor runs there: it tries what every policy denies
 * (unshare(CLONE_NEWUSER)) and says so on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void ran(void)
{
	int rc = unshare(CLONE_NEWUSER);
	fprintf(stderr, "nss module ran in pid %d: unshare(CLONE_NEWUSER)=%s\n",
		(int)getpid(), rc ? strerror(errno) : "ok");
}
