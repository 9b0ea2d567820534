/* tests/unit/check_tunnel.c: how a CONNECT tunnel's end is recorded, over a real TCP upstream
 * on loopback and a socketpair as the box: resets while a side is closing are an ordinary end,
 * resets before either end are failures named by the side, a proxy stop is one unless the box
 * had already gone. */
#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/proxy_internal.h"

static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";

/* The upstream's behaviour after it has read the box's "hello". */
enum up_mode {
	UP_END_THEN_RESET, /* "world", its end, then closes with the box's next bytes unread */
	UP_RESET,	   /* closes at once with SO_LINGER 0: a reset before any end */
	UP_HOLD,	   /* waits for `release`, then closes */
};

struct upstream {
	int lfd;
	uint16_t port;
	enum up_mode mode;
	int release[2];
	pthread_t t;
};

static void read_exact(int fd, char *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k = read(fd, buf + got, n - got);

		ck_assert_int_gt(k, 0);
		got += (size_t)k;
	}
}

static void *upstream_main(void *arg)
{
	struct upstream *u = arg;
	int c = accept(u->lfd, NULL, NULL);
	char buf[8];

	if (c < 0)
		return NULL;
	read_exact(c, buf, 5);
	if (u->mode == UP_END_THEN_RESET) {
		(void)proxy_send_all(c, "world", 5);
		shutdown(c, SHUT_WR);
		/* Wait until the box's next bytes sit unread here: closing now sends a reset. */
		(void)recv(c, buf, 1, MSG_PEEK);
	} else if (u->mode == UP_RESET) {
		struct linger l = {.l_onoff = 1, .l_linger = 0};

		setsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	} else {
		(void)read(u->release[0], buf, 1);
	}
	close(c);
	return NULL;
}

static void upstream_start(struct upstream *u, enum up_mode mode)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);

	u->mode = mode;
	u->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(u->lfd, 0);
	ck_assert_int_eq(bind(u->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(u->lfd, 4), 0);
	ck_assert_int_eq(getsockname(u->lfd, (struct sockaddr *)&sa, &len), 0);
	u->port = ntohs(sa.sin_port);
	ck_assert_int_eq(pipe2(u->release, O_CLOEXEC), 0);
	ck_assert_int_eq(pthread_create(&u->t, NULL, upstream_main, u), 0);
}

static void upstream_join(struct upstream *u)
{
	pthread_join(u->t, NULL);
	close(u->lfd);
	close(u->release[0]);
	close(u->release[1]);
}

static void upstream_release(struct upstream *u)
{
	ck_assert_int_eq(write(u->release[1], "x", 1), 1);
	upstream_join(u);
}

/* The tunnel under test: its proxy, the box's end of the connection, the recorded reason. */
struct tunnel_run {
	struct proxy *p;
	int box, served;
	pthread_t t;
	char reason[128];
	int n_records;
};

static void observe(void *ctx, const struct proxy_record *rec)
{
	struct tunnel_run *r = ctx;

	snprintf(r->reason, sizeof(r->reason), "%s", rec->reason ? rec->reason : "(null)");
	r->n_records++;
}

static void *serve_main(void *arg)
{
	struct tunnel_run *r = arg;

	proxy_egress_serve(r->p, r->served);
	close(r->served);
	return NULL;
}

/* Opens a tunnel to the upstream, sends "hello" through it and reads the 200. */
static void tunnel_open(struct tunnel_run *r, const struct upstream *u)
{
	char allow[32], head[sizeof(established) - 1];
	const char *const hosts[] = {allow};
	struct proxy_config cfg = {
	    .allow_hosts = hosts, .n_allow_hosts = 1, .observer = observe, .observer_ctx = r};
	char *req;
	int sv[2];

	snprintf(allow, sizeof(allow), "127.0.0.1:%u", u->port);
	ck_assert_int_eq(proxy_new(&r->p, &cfg), 0);
	/* No listener here, so no stop pipe yet: the one a listening proxy's tunnels watch. */
	ck_assert_int_eq(pipe2(r->p->wake, O_CLOEXEC), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	r->served = sv[0];
	r->box = sv[1];
	ck_assert_int_eq(pthread_create(&r->t, NULL, serve_main, r), 0);
	req = util_asprintf("CONNECT %s HTTP/1.1\r\n\r\nhello", allow);
	ck_assert_int_eq(proxy_send_all(r->box, req, strlen(req)), 0);
	free(req);
	read_exact(r->box, head, sizeof(head));
	ck_assert(!memcmp(head, established, sizeof(head)));
}

/* Waits for the tunnel to be recorded; returns its reason. */
static const char *tunnel_close(struct tunnel_run *r)
{
	pthread_join(r->t, NULL);
	if (r->box >= 0)
		close(r->box);
	proxy_free(r->p);
	ck_assert_int_eq(r->n_records, 1);
	return r->reason;
}

static void proxy_stop_signal(struct proxy *p)
{
	ck_assert_int_eq(write(p->wake[1], "x", 1), 1);
}

START_TEST(reset_after_the_upstream_ended_is_an_ordinary_end)
{
	struct upstream u;
	struct tunnel_run r = {0};
	char buf[8];

	upstream_start(&u, UP_END_THEN_RESET);
	tunnel_open(&r, &u);
	read_exact(r.box, buf, 5);
	ck_assert(!memcmp(buf, "world", 5));
	ck_assert_int_eq(read(r.box, buf, 1), 0); /* the upstream's end, passed on */
	/* Like a TLS close_notify: bytes after the upstream's end, which it resets. */
	ck_assert_int_eq(proxy_send_all(r.box, "bye1", 4), 0);
	upstream_join(&u);
	ck_assert_int_eq(proxy_send_all(r.box, "bye2", 4), 0);
	ck_assert_str_eq(tunnel_close(&r), "allowed");
}
END_TEST

START_TEST(reset_before_any_end_is_a_failure)
{
	struct upstream u;
	struct tunnel_run r = {0};
	struct pollfd pfd;

	/* The upstream resets with the tunnel in full use. */
	upstream_start(&u, UP_RESET);
	tunnel_open(&r, &u);
	ck_assert_str_eq(tunnel_close(&r), "connection reset by the upstream");
	upstream_join(&u);

	/* The box goes with bytes unread (a reset on its socket), the upstream still there. */
	memset(&r, 0, sizeof(r));
	upstream_start(&u, UP_HOLD);
	tunnel_open(&r, &u);
	/* Bytes for the box it will never read (the upstream is silent: no other writer). */
	ck_assert_int_eq(proxy_send_all(r.served, "unread", 6), 0);
	pfd = (struct pollfd){.fd = r.box, .events = POLLIN};
	ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
	close(r.box);
	r.box = -1;
	ck_assert_str_eq(tunnel_close(&r), "connection reset by the box");
	upstream_release(&u);
}
END_TEST

START_TEST(proxy_stop_after_the_box_left_is_an_ordinary_end)
{
	struct upstream u;
	struct tunnel_run r = {0};

	/* Control: the box still there when the proxy stops: the stop is the reason. */
	upstream_start(&u, UP_HOLD);
	tunnel_open(&r, &u);
	proxy_stop_signal(r.p);
	ck_assert_str_eq(tunnel_close(&r), "proxy stopped");
	upstream_release(&u);

	/* The box closed its end (and went), the upstream had not answered yet. */
	memset(&r, 0, sizeof(r));
	upstream_start(&u, UP_HOLD);
	tunnel_open(&r, &u);
	close(r.box);
	r.box = -1;
	proxy_stop_signal(r.p);
	ck_assert_str_eq(tunnel_close(&r), "allowed");
	upstream_release(&u);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tunnel");
	TCase *tc = tcase_create("endings");
	SRunner *sr;
	int failed;

	signal(SIGPIPE, SIG_IGN);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, reset_after_the_upstream_ended_is_an_ordinary_end);
	tcase_add_test(tc, reset_before_any_end_is_a_failure);
	tcase_add_test(tc, proxy_stop_after_the_box_left_is_an_ordinary_end);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
