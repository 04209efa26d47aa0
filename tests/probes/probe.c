/*
 * probe: one escape attempt per run, for sandboy's container escape suite.
 *
 *   gcc -static -O2 -Wall -Wextra -o probe probe.c
 *
 * Usage: probe SUBCOMMAND [ARGS]
 *   write PATH | create PATH | unlink PATH | rename A B | read PATH | exec PATH
 *   connect PORT | bind PORT            (TCP, 127.0.0.1)
 *   syscall NAME                        (raw syscall with harmless arguments)
 *   abstract-connect NAME               (AF_UNIX abstract socket "\0NAME")
 *   kill PID SIG | fds | forkbomb | membomb MB | spin
 *   clone FLAGS | clone3 FLAGS | fork    (child exits at once; FLAGS in hex)
 *   fastopen PORT                       (sendto MSG_FASTOPEN, 127.0.0.1)
 *   tfo-connect                         (setsockopt TCP_FASTOPEN_CONNECT)
 *   mptcp PORT                          (MPTCP socket + connect)
 *   listen-unbound                      (listen on a never-bound TCP socket)
 *   socket FAMILY TYPE PROTO            (numbers)
 *   udp-send PORT                       (sendto on a UDP socket, 127.0.0.1)
 *   memfd-exec SRC exec|plain           (copy SRC into a memfd, execveat it: "hello")
 *   mmap-exec PATH                      (mmap PROT_EXEC of a file)
 *   chmod PATH MODE | create-mode PATH MODE   (octal MODE)
 *   openat2 PATH | euid | hello
 *   fallocate PATH MB                   (reserve MB MiB in a new file)
 *   inodes DIR                          (create files in DIR until refused: "files=N ")
 *   tty-push [high]                     (ioctl TIOCSTI of "#" on fd 0; "high": garbage
 *                                        in the request's upper 32 bits)
 *   tty-size                            (ioctl TIOCGWINSZ on fd 0: the allowed counterpart)
 *   utime PATH | fchmod PATH MODE | chown-self PATH | setxattr PATH
 *                                       (metadata: mtime to 1000000000; fchmod through an
 *                                        O_RDONLY fd; chown to the caller's own ids;
 *                                        user.sandboy = "1")
 *   shmget KEY | shm-private | shm-create KEY
 *   mq-create NAME | mq-unlink NAME   POSIX message queues (mq_open O_CREAT|O_EXCL 0666, mq_unlink)
 *                                       (find a System V segment by key (hex); make and
 *                                        remove a private one; make one that stays)
 *   prlimit PID | renice PID            (read another process's RLIMIT_NOFILE; set its
 *                                        nice value to what it is: both harmless)
 *   chattr PATH                         (FS_IOC_SETFLAGS: add FS_NOATIME_FL, "chattr +A")
 *   fsetattr PATH                       (file_setattr(2), Linux 6.17: the same flag by path)
 *   setfcap PATH                        (security.capability: cap_setuid,cap_setgid=ep)
 *   mknod-char PATH                     (a 0666 character device 1:1, /dev/mem's)
 *   at-pid PID                          (host side: a process sleeping 60 s with exactly that pid)
 *   reap CMD ARG...                     (host side: CMD as a child subreaper that reaps its orphans)
 *   orphan-chmod PATH OUT               (once orphaned, decide chmod through a seccomp
 *                                        listener of its own, then chmod PATH 0644; writes
 *                                        "plain=R listener=R chmod=R" to OUT, R "ok" or
 *                                        an errno; "plain": a filter with no listener)
 *
 * Prints "ok" and exits 0 when the attempt succeeded, "errno=<NAME>" and
 * exits 1 when it failed; exit 2 on usage errors. For "connect", a refused
 * connection (ECONNREFUSED) means the sandbox let the attempt through.
 * For "syscall" the harmless arguments make an allowed call fail too
 * (EINVAL, EFAULT, EBADF, ...): the sandbox refused it only if the errno is
 * the profile's (EPERM by default) or the process died of SIGSYS.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sched.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <linux/fs.h>
#include <sys/xattr.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <mqueue.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <netinet/tcp.h>
#include <linux/sched.h>
#include <linux/openat2.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <unistd.h>

static const char *errname(int e)
{
	switch (e) {
#define E(x) case x: return #x;
	E(EPERM) E(ENOENT) E(ESRCH) E(EINTR) E(EIO) E(ENXIO) E(E2BIG) E(ENOEXEC)
	E(EBADF) E(ECHILD) E(EAGAIN) E(ENOMEM) E(EACCES) E(EFAULT) E(EBUSY)
	E(EEXIST) E(EXDEV) E(ENODEV) E(ENOTDIR) E(EISDIR) E(EINVAL) E(ENFILE)
	E(EMFILE) E(ENOTTY) E(ETXTBSY) E(EFBIG) E(ENOSPC) E(ESPIPE) E(EROFS)
	E(EMLINK) E(ERANGE) E(ENOSYS) E(ENOTEMPTY) E(ELOOP) E(ENOTSOCK)
	E(EADDRINUSE) E(EADDRNOTAVAIL) E(ENETUNREACH) E(ECONNREFUSED)
	E(ETIMEDOUT) E(EOPNOTSUPP) E(EAFNOSUPPORT) E(EPROTONOSUPPORT) E(ENOKEY)
	E(EKEYREJECTED) E(ENOPROTOOPT) E(EINPROGRESS) E(ESOCKTNOSUPPORT)
#undef E
	default: return "UNKNOWN";
	}
}

static int result(long rc)
{
	if (rc < 0) {
		int e = errno;
		printf("errno=%s\n", errname(e));
		if (!strcmp(errname(e), "UNKNOWN"))
			fprintf(stderr, "probe: errno %d\n", e);
		return 1;
	}
	printf("ok\n");
	return 0;
}

static int tcp(int port, int do_bind)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return result(-1);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (do_bind)
		return result(bind(fd, (struct sockaddr *)&a, sizeof a));
	if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
		return result(0);
	if (errno == ECONNREFUSED) {
		printf("ok (ECONNREFUSED)\n");
		return 0;
	}
	return result(-1);
}

static int abstract_connect(const char *name)
{
	struct sockaddr_un a;
	size_t n = strlen(name);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return result(-1);
	if (n > sizeof a.sun_path - 1)
		n = sizeof a.sun_path - 1;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	memcpy(a.sun_path + 1, name, n);
	return result(connect(fd, (struct sockaddr *)&a,
			      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)));
}

/* Raw syscalls with harmless arguments: each fails with EINVAL/EFAULT/EBADF
 * if the sandbox lets it through, with EPERM (or the profile's errno) if not. */
static int raw_syscall(const char *name)
{
	long rc;
	errno = 0;
	if (!strcmp(name, "ptrace"))
		rc = syscall(SYS_ptrace, 0x7fffffffL /* PTRACE_?? invalid */, 0, 0, 0);
	else if (!strcmp(name, "mount"))
		rc = syscall(SYS_mount, "none", "/nonexistent-probe", "tmpfs", 0L, NULL);
	else if (!strncmp(name, "mount_setattr", 13)) {
		/* Clear MOUNT_ATTR_RDONLY (0x1) of the mount at / (or at the path
		 * after "mount_setattr:"): a read-only mount made writable
		 * without mount(2). */
		struct { unsigned long long set, clr, prop, userns; } attr = { 0, 1, 0, 0 };
		const char *at = name[13] == ':' ? name + 14 : "/";
		rc = syscall(442 /* SYS_mount_setattr */, AT_FDCWD, at, 0, &attr, sizeof attr);
	} else if (!strncmp(name, "open_tree_attr", 14)) {
		/* A detached copy of the mount at the path after "open_tree_attr:"
		 * (or /) without MOUNT_ATTR_RDONLY (Linux 6.15). */
		struct { unsigned long long set, clr, prop, userns; } attr = { 0, 1, 0, 0 };
		const char *at = name[14] == ':' ? name + 15 : "/";
		rc = syscall(467 /* SYS_open_tree_attr */, AT_FDCWD, at,
			     1 /* OPEN_TREE_CLONE */ | O_CLOEXEC | 0x8000 /* AT_RECURSIVE */,
			     &attr, sizeof attr);
	} else if (!strcmp(name, "fsconfig"))
		rc = syscall(431 /* SYS_fsconfig */, -1, 6 /* FSCONFIG_CMD_CREATE */, NULL, NULL, 0);
	else if (!strcmp(name, "umount2"))
		rc = syscall(SYS_umount2, "/nonexistent-probe", 0);
	else if (!strcmp(name, "unshare-user"))
		rc = syscall(SYS_unshare, CLONE_NEWUSER);
	else if (!strcmp(name, "unshare-mount"))
		rc = syscall(SYS_unshare, CLONE_NEWNS);
	else if (!strcmp(name, "setns"))
		rc = syscall(SYS_setns, -1, 0);
	else if (!strcmp(name, "bpf"))
		rc = syscall(SYS_bpf, -1, NULL, 0);
	else if (!strcmp(name, "keyctl"))
		rc = syscall(SYS_keyctl, -1L, 0L, 0L, 0L, 0L);
	else if (!strcmp(name, "add_key"))
		rc = syscall(SYS_add_key, "user", "probe", "x", 1L, -1L /* bad keyring */);
	else if (!strcmp(name, "io_uring_setup"))
		rc = syscall(SYS_io_uring_setup, 0, NULL);
	else if (!strcmp(name, "open_by_handle_at"))
		rc = syscall(SYS_open_by_handle_at, -1, NULL, 0);
	else if (!strcmp(name, "perf_event_open"))
		rc = syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0L);
	else if (!strcmp(name, "kexec_load"))
		rc = syscall(SYS_kexec_load, 0L, 0L, NULL, 0xffffffffL);
	else if (!strcmp(name, "init_module"))
		rc = syscall(SYS_init_module, NULL, 0L, "");
	else if (!strcmp(name, "userfaultfd"))
		rc = syscall(SYS_userfaultfd, 0x7fffffff /* invalid flags */);
	else if (!strcmp(name, "personality"))
		rc = syscall(SYS_personality, 0xffffffffL /* query only */);
	else {
		fprintf(stderr, "probe: unknown syscall %s\n", name);
		return 2;
	}
	return result(rc);
}

static struct sockaddr_in loopback(int port)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* A child made with raw clone/clone3 exits at once; the parent reaps it. */
static int do_clone(unsigned long flags, int v3)
{
	long pid;
	if (v3) {
		struct clone_args ca;
		memset(&ca, 0, sizeof ca);
		ca.flags = flags;
		ca.exit_signal = SIGCHLD;
		pid = syscall(SYS_clone3, &ca, sizeof ca);
	} else {
		pid = syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0L);
	}
	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	return result(pid);
}

static int fastopen(int port)
{
	struct sockaddr_in a = loopback(port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return result(-1);
	return result(sendto(fd, "x", 1, MSG_FASTOPEN, (struct sockaddr *)&a, sizeof a));
}

static int mptcp(int port)
{
	struct sockaddr_in a = loopback(port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 262 /* IPPROTO_MPTCP */);
	if (fd < 0)
		return result(-1);
	return result(connect(fd, (struct sockaddr *)&a, sizeof a));
}

static int udp_send(int port)
{
	struct sockaddr_in a = loopback(port);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return result(-1);
	return result(sendto(fd, "x", 1, 0, (struct sockaddr *)&a, sizeof a));
}

/* Copy SRC into a memfd and run it as "hello": prints hello when the
 * kernel lets a memfd execute. */
static int memfd_exec(const char *src, int exec_flag)
{
	char buf[65536];
	ssize_t n;
	int in = open(src, O_RDONLY | O_CLOEXEC);
	int fd;
	char *args[] = { "probe", "hello", NULL };
	char *env[] = { NULL };
	if (in < 0)
		return result(-1);
	fd = (int)syscall(SYS_memfd_create, "probe",
			  exec_flag ? 0x10U /* MFD_EXEC */ : 0U);
	if (fd < 0)
		return result(-1);
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(fd, buf, (size_t)n) != n)
			return result(-1);
	syscall(SYS_execveat, fd, "", args, env, AT_EMPTY_PATH);
	return result(-1);
}

static int mmap_exec(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	void *p;
	if (fd < 0)
		return result(-1);
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	return result(p == MAP_FAILED ? -1 : 0);
}

static int do_openat2(const char *path)
{
	struct open_how how;
	memset(&how, 0, sizeof how);
	how.flags = O_RDONLY | O_CLOEXEC;
	return result(syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how));
}

static int list_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	if (!d)
		return result(-1);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
			printf("%s ", e->d_name);
	printf("\n");
	closedir(d);
	return 0;
}

static int forkbomb(void)
{
	long n = 0;
	for (;;) {
		pid_t p = fork();
		if (p < 0) {
			printf("forks=%ld ", n);
			return result(-1);
		}
		if (p == 0) {
			pause();
			_exit(0);
		}
		if (++n >= 100000) {
			printf("forks=%ld ", n);
			return result(0);
		}
	}
}

static int membomb(long mb)
{
	long i;
	for (i = 0; i < mb; i++) {
		char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			printf("mb=%ld ", i);
			return result(-1);
		}
		memset(p, 1, 1 << 20);
	}
	return result(0);
}

static int inode_flood(const char *dir)
{
	char path[4096];
	long n;
	for (n = 0; n < 10000000; n++) {
		snprintf(path, sizeof path, "%s/f%ld", dir, n);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0) {
			printf("files=%ld ", n);
			return result(-1);
		}
		close(fd);
	}
	printf("files=%ld ", n);
	return result(0);
}

/* orphan-chmod: wait until the parent is gone (up to 10 s), then install a
 * filter of our own that sends chmod/fchmodat to a listener we hold, answer
 * with CONTINUE from a child, and chmod PATH 0644. Where a runtime's own
 * notifying filter has lost its listener, the kernel gives the notification
 * to the newest filter's listener: this one, and the call runs unchecked. */
static int orphan_chmod(const char *path, const char *out)
{
	pid_t first = getppid();
	for (int i = 0; i < 1000 && getppid() == first; i++)
		usleep(10000);
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_chmod, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fchmodat, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	};
	struct sock_fprog prog = { sizeof f / sizeof f[0], f };
	/* First a filter without a listener, as a sandbox nested in a step
	 * installs one (its own ALLOW for everything changes nothing). */
	struct sock_filter all[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog plain = { 1, all };
	int pe = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &plain) ? errno : 0;
	long l = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			 SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	int le = l < 0 ? errno : 0;
	if (l >= 0 && fork() == 0) {
		struct seccomp_notif req;
		struct seccomp_notif_resp resp;
		memset(&req, 0, sizeof req);
		if (ioctl((int)l, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) {
			memset(&resp, 0, sizeof resp);
			resp.id = req.id;
			resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
			ioctl((int)l, SECCOMP_IOCTL_NOTIF_SEND, &resp);
		}
		_exit(0);
	}
	int ce = chmod(path, 0644) ? errno : 0;
	FILE *o = fopen(out, "w");
	if (!o)
		return 1;
	fprintf(o, "plain=%s listener=%s chmod=%s\n", pe ? errname(pe) : "ok",
		le ? errname(le) : "ok", ce ? errname(ce) : "ok");
	fclose(o);
	return 0;
}

/* Opens of HOST through every fd of process PID taken as a procfs of the
 * host's pid namespace: /proc/PID/fd/N/1/root is the host's `/` when fd N
 * is such a handle (pathrs's cache, inherited from the runtime). */
static long fd_scan(int pid, const char *host)
{
	char p[600];
	long hits = 0;
	snprintf(p, sizeof p, "/proc/%d/fd", pid);
	DIR *d = opendir(p);
	struct dirent *e;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "/proc/%d/fd/%s/1/root%s", pid, e->d_name, host);
		int fd = open(p, O_RDONLY | O_NONBLOCK);
		if (fd >= 0) {
			hits++;
			close(fd);
		}
	}
	closedir(d);
	return hits;
}

/* For SECONDS, open HOST below /proc/<pid>/root of every other process in
 * /proc, and through each of its fds (`fd_scan`), as a container process
 * with CAP_SYS_PTRACE can: a runtime process in the container's pid
 * namespace that still has the host's `/`, or a handle on the host's
 * procfs, shows the host's file there. Prints "hits=N" (opens of HOST that
 * succeeded) and "peers=N" (opens of OWN, a file of the container, through
 * another process's root: the walk itself works, the allowed
 * counterpart). */
static int root_scan(int seconds, const char *host, const char *own)
{
	char p[600];
	long hits = 0, peers = 0;
	int me = getpid();
	time_t end = time(NULL) + seconds;
	printf("scanning\n");
	while (time(NULL) < end) {
		DIR *d = opendir("/proc");
		struct dirent *e;
		if (!d)
			return 1;
		while ((e = readdir(d))) {
			int pid = atoi(e->d_name);
			if (pid <= 1 || pid == me)
				continue;
			const char *paths[2] = { host, own };
			for (int i = 0; i < 2; i++) {
				snprintf(p, sizeof p, "/proc/%d/root%s", pid, paths[i]);
				int fd = open(p, O_RDONLY | O_NONBLOCK);
				if (fd >= 0) {
					*(i ? &peers : &hits) += 1;
					close(fd);
				}
			}
			hits += fd_scan(pid, host);
		}
		closedir(d);
	}
	printf("hits=%ld peers=%s\n", hits, peers ? "some" : "none");
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	const char *a = argc > 2 ? argv[2] : NULL;
	const char *b = argc > 3 ? argv[3] : NULL;
	int fd;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(cmd, "write") && a) {
		fd = open(a, O_WRONLY | O_CLOEXEC);
		return result(fd < 0 ? -1 : write(fd, "x", 1));
	} else if (!strcmp(cmd, "create") && a) {
		return result(open(a, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
	} else if (!strcmp(cmd, "unlink") && a) {
		return result(unlink(a));
	} else if (!strcmp(cmd, "rename") && a && b) {
		return result(rename(a, b));
	} else if (!strcmp(cmd, "read") && a) {
		char buf[1];
		fd = open(a, O_RDONLY | O_CLOEXEC);
		return result(fd < 0 ? -1 : read(fd, buf, 1));
	} else if (!strcmp(cmd, "exec") && a) {
		char *args[] = { (char *)a, NULL };
		execv(a, args);
		return result(-1);
	} else if ((!strcmp(cmd, "connect") || !strcmp(cmd, "bind")) && a) {
		return tcp(atoi(a), cmd[0] == 'b');
	} else if (!strcmp(cmd, "syscall") && a) {
		return raw_syscall(a);
	} else if (!strcmp(cmd, "abstract-connect") && a) {
		return abstract_connect(a);
	} else if (!strcmp(cmd, "kill") && a && b) {
		return result(kill((pid_t)atoi(a), atoi(b)));
	} else if (!strcmp(cmd, "fds")) {
		return list_fds();
	} else if (!strcmp(cmd, "forkbomb")) {
		return forkbomb();
	} else if (!strcmp(cmd, "membomb") && a) {
		return membomb(atol(a));
	} else if ((!strcmp(cmd, "clone") || !strcmp(cmd, "clone3")) && a) {
		return do_clone(strtoul(a, NULL, 16), cmd[5] == '3');
	} else if (!strcmp(cmd, "fork")) {
		pid_t p = fork();
		if (p == 0)
			_exit(0);
		if (p > 0)
			waitpid(p, NULL, 0);
		return result(p);
	} else if (!strcmp(cmd, "fastopen") && a) {
		return fastopen(atoi(a));
	} else if (!strcmp(cmd, "tfo-connect")) {
		int one = 1;
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		return result(fd < 0 ? -1 : setsockopt(fd, IPPROTO_TCP, 30 /* TCP_FASTOPEN_CONNECT */,
						       &one, sizeof one));
	} else if (!strcmp(cmd, "mptcp") && a) {
		return mptcp(atoi(a));
	} else if (!strcmp(cmd, "listen-unbound")) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		return result(fd < 0 ? -1 : listen(fd, 1));
	} else if (!strcmp(cmd, "socket") && a && b && argc > 4) {
		return result(socket(atoi(a), atoi(b), atoi(argv[4])));
	} else if (!strcmp(cmd, "socketpair") && a) {
		int sv[2];
		return result(socketpair(AF_UNIX, (int)strtol(a, NULL, 0), 0, sv));
	} else if (!strcmp(cmd, "udp-send") && a) {
		return udp_send(atoi(a));
	} else if (!strcmp(cmd, "memfd-exec") && a && b) {
		return memfd_exec(a, !strcmp(b, "exec"));
	} else if (!strcmp(cmd, "mmap-exec") && a) {
		return mmap_exec(a);
	} else if (!strcmp(cmd, "chmod") && a && b) {
		return result(chmod(a, (mode_t)strtoul(b, NULL, 8)));
	} else if (!strcmp(cmd, "create-mode") && a && b) {
		return result(open(a, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
				   (mode_t)strtoul(b, NULL, 8)));
	} else if (!strcmp(cmd, "openat2") && a) {
		return do_openat2(a);
	} else if (!strcmp(cmd, "fallocate") && a && b) {
		fd = open(a, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			return result(-1);
		return result(fallocate(fd, 0, 0, (off_t)atol(b) << 20));
	} else if (!strcmp(cmd, "tty-push")) {
		/* The raw syscall: libc's ioctl() would truncate the request. */
		unsigned long req = TIOCSTI | (a && !strcmp(a, "high") ? 0x100000000UL : 0);
		char c = '#';
		return result(syscall(SYS_ioctl, 0, req, &c));
	} else if (!strcmp(cmd, "utime") && a) {
		struct timespec t[2] = {{1000000000, 0}, {1000000000, 0}};
		return result(utimensat(AT_FDCWD, a, t, 0));
	} else if (!strcmp(cmd, "fchmod") && a && b) {
		fd = open(a, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return result(-1);
		return result(fchmod(fd, (mode_t)strtoul(b, NULL, 8)));
	} else if (!strcmp(cmd, "chown-self") && a) {
		return result(chown(a, getuid(), getgid()));
	} else if (!strcmp(cmd, "setxattr") && a) {
		return result(setxattr(a, "user.sandboy", "1", 1, 0));
	} else if (!strcmp(cmd, "setfcap") && a) {
		/* VFS_CAP_REVISION_2 data: cap_setuid,cap_setgid = ep. */
		uint32_t cap[5] = {0x02000001, (1u << 6) | (1u << 7), 0, 0, 0};
		return result(setxattr(a, "security.capability", cap, sizeof cap, 0));
	} else if (!strcmp(cmd, "mknod-char") && a) {
		/* /dev/mem's numbers: 1, 1. */
		return result(mknod(a, S_IFCHR | 0666, makedev(1, 1)));
	} else if (!strcmp(cmd, "reap") && a) {
		/* Run argv[2..] as a child subreaper and reap everything,
		 * orphans included (a detached container's exited init), as
		 * an engine's shim does; exit with the command's status. */
		int status = 0, st;
		pid_t child, w;
		prctl(PR_SET_CHILD_SUBREAPER, 1);
		child = fork();
		if (child == 0) {
			execvp(argv[2], argv + 2);
			_exit(127);
		}
		while ((w = wait(&st)) > 0)
			if (w == child)
				status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		return status;
	} else if (!strcmp(cmd, "at-pid") && a) {
		/* A process with exactly this pid (clone3 set_tid, as root in
		 * its pid namespace): a recycled pid. It sleeps 60 s. */
		pid_t want = (pid_t)atoi(a);
		struct clone_args ca;
		memset(&ca, 0, sizeof ca);
		ca.set_tid = (uint64_t)(uintptr_t)&want;
		ca.set_tid_size = 1;
		ca.exit_signal = SIGCHLD;
		long r = syscall(SYS_clone3, &ca, sizeof ca);
		if (r == 0) {
			sleep(60);
			_exit(0);
		}
		return result(r < 0 ? -1 : 0);
	} else if (!strcmp(cmd, "tty-fg")) {
		/* Take the terminal's foreground and set TOSTOP: any other
		 * process group of the session that writes to it now stops. */
		struct termios t;
		signal(SIGTTOU, SIG_IGN);
		if (setpgid(0, 0) || tcsetpgrp(0, getpgrp()) || tcgetattr(0, &t))
			return result(-1);
		t.c_lflag |= TOSTOP;
		if (tcsetattr(0, TCSANOW, &t))
			return result(-1);
		printf("foreground\n");
		fflush(stdout);
		for (;;)
			pause();
	} else if (!strcmp(cmd, "tty-size")) {
		struct winsize ws;
		return result(ioctl(0, TIOCGWINSZ, &ws));
	} else if (!strcmp(cmd, "inodes") && a) {
		return inode_flood(a);
	} else if (!strcmp(cmd, "shmget") && a) {
		return result(shmget((key_t)strtoul(a, NULL, 16), 0, 0));
	} else if (!strcmp(cmd, "shm-create") && a) {
		return result(shmget((key_t)strtoul(a, NULL, 16), 4096, IPC_CREAT | 0600));
	} else if (!strcmp(cmd, "mq-create") && a) {
		/* The queue exists once the kernel made it, even when the open
		 * that follows is refused: the result alone does not say. */
		mqd_t q = mq_open(a, O_CREAT | O_EXCL | O_RDWR, 0666, NULL);
		if (q != (mqd_t)-1)
			mq_close(q);
		return result(q == (mqd_t)-1 ? -1 : 0);
	} else if (!strcmp(cmd, "mq-unlink") && a) {
		return result(mq_unlink(a));
	} else if (!strcmp(cmd, "shm-private")) {
		long id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
		if (id >= 0)
			shmctl((int)id, IPC_RMID, NULL);
		return result(id);
	} else if (!strcmp(cmd, "prlimit") && a) {
		struct rlimit old;
		return result(prlimit((pid_t)atoi(a), RLIMIT_NOFILE, NULL, &old));
	} else if (!strcmp(cmd, "renice") && a) {
		errno = 0;
		int nice = getpriority(PRIO_PROCESS, (id_t)atoi(a));
		if (nice == -1 && errno)
			return result(-1);
		return result(setpriority(PRIO_PROCESS, (id_t)atoi(a), nice));
	} else if (!strcmp(cmd, "chattr") && a) {
		int fd = open(a, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return result(-1);
		int flags = 0;
		if (ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0)
			return result(-1);
		flags |= FS_NOATIME_FL;
		return result(ioctl(fd, FS_IOC_SETFLAGS, &flags));
	} else if (!strcmp(cmd, "fsetattr") && a) {
		/* struct file_attr: fa_xflags, then four u32 fields. */
		struct { unsigned long long xflags; unsigned int ext, next, proj, cow; } fa;
		memset(&fa, 0, sizeof fa);
		if (syscall(468 /* SYS_file_getattr */, AT_FDCWD, a, &fa, sizeof fa, 0) != 0)
			return result(-1);
		fa.xflags |= 0x40; /* FS_XFLAG_NOATIME */
		return result(syscall(469 /* SYS_file_setattr */, AT_FDCWD, a, &fa, sizeof fa, 0));
	} else if (!strcmp(cmd, "orphan-chmod") && a && b) {
		return orphan_chmod(a, b);
	} else if (!strcmp(cmd, "euid")) {
		printf("euid=%d\n", (int)geteuid());
		return 0;
	} else if (!strcmp(cmd, "root-scan") && a && b && argc > 4) {
		return root_scan(atoi(a), b, argv[4]);
	} else if (!strcmp(cmd, "hello")) {
		printf("hello\n");
		return 0;
	} else if (!strcmp(cmd, "spin")) {
		for (;;)
			;
	}
	fprintf(stderr, "usage: probe write|create|unlink|read|exec PATH | rename A B | "
			"connect|bind PORT | syscall NAME | abstract-connect NAME | "
			"kill PID SIG | fds | forkbomb | membomb MB | spin\n");
	return 2;
}
