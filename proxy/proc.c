/*
 * proxy/proc.c: the launcher's side of arborinth_proxy. Starts the program with its command
 * line (proxy_args_format), a ready pipe and a control pipe, and reads its answer
 * (proxy_ready_parse). The program dies with its launcher: PR_SET_PDEATHSIG (set before
 * exec, then the parent checked, so a launcher killed in between is noticed too) and the end
 * of the control pipe, whose only writer is the launcher (close-on-exec: no box holds it).
 * It runs in its own session, so the terminal's ^C reaches the box, not the proxy; the
 * launcher stops it by closing the control pipe once the box is done.
 */
#include "proxy/proxy.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct proxy_proc {
	pid_t pid;
	int control;  /* write end of the control pipe */
	int ready_fd; /* read end of the ready pipe until the answer is in */
	int rc;	      /* the answer's: 0, or the failure (its message in msg) */
	char *msg;
	char *rest; /* what came after the answer's line: the start of the second part */
	struct proxy_ready *ready;
};

/* What the child needs: all made by the parent before the child starts. */
struct child_args {
	char **argv;
	pid_t parent;
	const int *keep;
	size_t n_keep;
};

/*
 * In the child: only the pipes and the listeners given are inherited, then exec. It may share
 * the launcher's memory (spawn): it allocates nothing and writes only its own stack.
 */
static int child(void *arg)
{
	const struct child_args *c = arg;
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct sigaction dfl = {.sa_handler = SIG_DFL}, old;
	sigset_t none;
	char msg[256];
	int n;

	/*
	 * The launcher's handlers are its own (they would run on its memory): every caught
	 * signal back to its default (exec does the same), then the launcher's blocked signals
	 * (all, while spawn runs) are not the proxy's (a mask survives exec).
	 */
	for (int sig = 1; sig < NSIG; sig++)
		if (sigaction(sig, NULL, &old) == 0 && old.sa_handler != SIG_DFL &&
		    old.sa_handler != SIG_IGN)
			sigaction(sig, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != c->parent)
		_exit(127);
	if (fd >= 0)
		dup2(fd, 0);
	/*
	 * Nothing else of the launcher's: only the pipes and listeners it was given. Every other
	 * descriptor close-on-exec in one call (Linux 5.11), else each closed in turn.
	 */
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) {
		for (size_t k = 0; k < c->n_keep; k++)
			if (c->keep[k] >= 0)
				fcntl(c->keep[k], F_SETFD, 0);
	} else {
		for (int i = 3; i < 1024; i++) {
			bool kept = false;

			for (size_t k = 0; k < c->n_keep; k++)
				kept = kept || c->keep[k] == i;
			if (kept)
				fcntl(i, F_SETFD, 0);
			else
				close(i);
		}
	}
	execv(c->argv[0], c->argv);
	/* The errno's name: strerror may allocate (its locale's text), not in shared memory. */
	n = snprintf(msg, sizeof(msg), "arborinth: cannot start %s: %s\n", c->argv[0],
		     strerrorname_np(errno) ?: "error");
	if (n > 0 && write(2, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1) < 0) {
	}
	_exit(127);
}

/*
 * The child that execs the proxy. It shares the launcher's memory until then and the
 * launcher waits for its exec (CLONE_VM | CLONE_VFORK, as posix_spawn and jail/run.c do): no
 * copy of the launcher's page tables. Every signal blocked meanwhile, so none runs a handler
 * of the launcher's in it before it resets them. AddressSanitizer builds fork (it does not
 * know that stack). -1 with errno.
 */
static pid_t spawn(struct child_args *c)
{
	sigset_t all, old;
	pid_t pid;
	int e;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
#ifdef ARB_ASAN
	pid = fork();
	if (pid == 0)
		_exit(child(c));
	e = errno;
#else
	const size_t size = 64 * 1024;
	char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

	if (stack == MAP_FAILED) {
		e = errno;
		pid = -1;
	} else {
		pid = clone(child, stack + size, CLONE_VM | CLONE_VFORK | SIGCHLD, c);
		e = errno;
		munmap(stack, size);
	}
#endif
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return pid;
}

/*
 * What the program writes on the ready pipe: with line, up to the end of the first line (the
 * answer; *len its length, the rest of what was read after it), else up to the end of file.
 */
static char *read_answer(int fd, bool line, size_t *line_len)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t n;

	if (!buf)
		return NULL;
	for (;;) {
		char *nl = line ? memchr(buf, '\n', len) : NULL;

		if (nl) {
			*line_len = (size_t)(nl - buf);
			break;
		}
		if (len + 1 >= cap) {
			char *nb = cap < (1u << 24) ? realloc(buf, cap *= 2) : NULL;

			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (line && !memchr(buf, '\n', len))
		*line_len = len;
	return buf;
}

/* The program's exit, when it said nothing. */
static int died(pid_t pid)
{
	int status = 0;

	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status))
		return util_err(-EIO, "the credential proxy (%s) was killed by signal %d",
				PROXY_PROGRAM, WTERMSIG(status));
	return util_err(-EIO, "the credential proxy (%s) exited with status %d without an answer",
			PROXY_PROGRAM, WEXITSTATUS(status));
}

int proxy_proc_spawn(struct proxy_proc **out, const char *exe, const struct proxy_args *a)
{
	struct proxy_args ca = *a;
	struct proxy_proc *pp = calloc(1, sizeof(*pp));
	int ready[2] = {-1, -1}, control[2] = {-1, -1}, *keep = NULL, rc;
	size_t n_keep = 0;
	char **argv = NULL;
	pid_t parent = getpid();
	struct child_args cargs;

	*out = NULL;
	if (!pp)
		return util_err(-ENOMEM, "out of memory");
	pp->pid = -1;
	pp->control = -1;
	pp->ready_fd = -1;
	/* The control channel is a socket: a write to a proxy that died is -EPIPE, no signal. */
	if (pipe2(ready, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, control) < 0) {
		rc = util_err(-errno, "cannot start the credential proxy: %s", strerror(errno));
		goto out;
	}
	ca.ready_fd = ready[1];
	ca.control_fd = control[0];
	keep = calloc(2 * a->n_backends + 2, sizeof(*keep));
	rc = keep ? proxy_args_format(&ca, exe, &argv) : util_err(-ENOMEM, "out of memory");
	if (rc < 0)
		goto out;
	keep[n_keep++] = ready[1];
	keep[n_keep++] = control[0];
	for (size_t i = 0; a->tcp && i < a->n_backends; i++) {
		keep[n_keep++] = a->tcp_fds ? a->tcp_fds[i] : -1;
		keep[n_keep++] = a->tcp_tls_fds ? a->tcp_tls_fds[i] : -1;
	}
	cargs = (struct child_args){.argv = argv, .parent = parent, .keep = keep, .n_keep = n_keep};
	pp->pid = spawn(&cargs);
	if (pp->pid < 0) {
		rc = util_err(-errno, "cannot start the credential proxy: %s", strerror(errno));
		goto out;
	}
	close(ready[1]);
	ready[1] = -1;
	close(control[0]);
	control[0] = -1;
	pp->control = control[1];
	control[1] = -1;
	pp->ready_fd = ready[0];
	ready[0] = -1;
	pp->rc = 1; /* not read yet */
out:
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
	free(keep);
	for (int i = 0; i < 2; i++) {
		if (ready[i] >= 0)
			close(ready[i]);
		if (control[i] >= 0)
			close(control[i]);
	}
	if (rc < 0) {
		proxy_proc_stop(pp);
		return rc;
	}
	*out = pp;
	return 0;
}

/*
 * The answer is the first line: the program writes it as soon as it listens, then opens its
 * audit log (state.db) while the launcher builds the box, and ends the pipe (all is well) or
 * writes why it cannot record (proxy_proc_confirm reads that before the box's command runs).
 * A failure before it answered is the whole text, without a newline.
 */
int proxy_proc_wait(struct proxy_proc *pp)
{
	size_t n = 0;
	char *answer;

	if (pp->rc <= 0)
		return pp->rc < 0 ? util_err(pp->rc, "%s", pp->msg ? pp->msg : "out of memory") : 0;
	answer = read_answer(pp->ready_fd, true, &n);
	if (answer && answer[n] == '\n' && !(pp->rest = strdup(answer + n + 1))) {
		free(answer);
		answer = NULL;
	}
	if (answer)
		answer[n] = '\0';
	if (!answer || !pp->rest) {
		close(pp->ready_fd); /* no second part: the pipe ended, or memory did */
		pp->ready_fd = -1;
	}
	if (!answer)
		pp->rc = util_err(-ENOMEM, "out of memory");
	else if (!*answer)
		pp->rc = died(pp->pid), pp->pid = -1;
	else
		pp->rc = proxy_ready_parse(&pp->ready, answer);
	free(answer);
	if (pp->rc < 0)
		pp->msg = strdup(util_err_msg());
	return pp->rc;
}

int proxy_proc_confirm(struct proxy_proc *pp)
{
	char *more, *text;
	int rc = proxy_proc_wait(pp);

	if (rc < 0 || pp->ready_fd < 0)
		return rc;
	more = read_answer(pp->ready_fd, false, NULL);
	close(pp->ready_fd);
	pp->ready_fd = -1;
	text = more ? util_asprintf("%s%s", pp->rest, more) : NULL;
	free(more);
	free(pp->rest);
	pp->rest = NULL;
	if (!text)
		rc = util_err(-ENOMEM, "out of memory");
	else if (text[strspn(text, "\n")]) {
		struct proxy_ready *r = NULL;

		/* Only a failure comes after the answer. */
		rc = proxy_ready_parse(&r, text);
		proxy_ready_free(r);
		if (rc == 0)
			rc = util_err(-EPROTO, "the credential proxy (%s) answered twice",
				      PROXY_PROGRAM);
	}
	free(text);
	if (rc < 0) {
		pp->rc = rc;
		pp->msg = strdup(util_err_msg());
	}
	return rc;
}

int proxy_proc_start(struct proxy_proc **out, const char *exe, const struct proxy_args *a)
{
	int rc = proxy_proc_spawn(out, exe, a);

	if (rc == 0 && (rc = proxy_proc_confirm(*out)) < 0) {
		proxy_proc_stop(*out);
		*out = NULL;
	}
	return rc;
}

const struct proxy_ready *proxy_proc_ready(const struct proxy_proc *pp)
{
	return pp ? pp->ready : NULL;
}

pid_t proxy_proc_pid(const struct proxy_proc *pp)
{
	return pp ? pp->pid : -1;
}

int proxy_proc_session(struct proxy_proc *pp, int64_t session)
{
	char line[40];
	int n = snprintf(line, sizeof(line), "session %lld\n", (long long)session);

	for (int off = 0; off < n;) {
		ssize_t w = send(pp->control, line + off, (size_t)(n - off), MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return util_err(-EPIPE, "the credential proxy has stopped");
		off += (int)w;
	}
	return 0;
}

void proxy_proc_end(struct proxy_proc *pp)
{
	if (pp && pp->control >= 0) {
		close(pp->control);
		pp->control = -1;
	}
}

void proxy_proc_stop(struct proxy_proc *pp)
{
	int status = 0;

	if (!pp)
		return;
	if (pp->control >= 0)
		close(pp->control);
	if (pp->ready_fd >= 0)
		close(pp->ready_fd);
	free(pp->msg);
	free(pp->rest);
	while (pp->pid > 0 && waitpid(pp->pid, &status, 0) < 0 && errno == EINTR)
		;
	/* A proxy that served the box and then crashed: its last requests may be unrecorded. */
	if (pp->pid > 0 && pp->rc == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		fprintf(stderr, "arborinth: warning: the credential proxy (%s) ended %s %d\n",
			PROXY_PROGRAM, WIFSIGNALED(status) ? "by signal" : "with status",
			WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	proxy_ready_free(pp->ready);
	free(pp);
}
