/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "authz.h"
#include "errno-util.h"
#include "fd-closer.h"
#include "fd-util.h"
#include "log.h"
#include "message.h"
#include "server.h"
#include "strv.h"
#include "time-util.h"

#define IDLE_TIMEOUT_USEC (120 * UINT64_C(1000000))
/* Connections beyond CORRAL_CONNECTIONS_MAX kept for root: when users have filled every
 * slot, the admin can still look and act. */
#define ROOT_RESERVED_CONNECTIONS 16U

typedef struct Connection Connection;

struct Call {
        Connection *conn;
        uint64_t job_id;
        void *data;
        bool more;
        bool oneway; /* a later answer is dropped, as an immediate one would be */
        /* Descriptors that came with the request (Run only), until the method takes them:
         * whatever is left is closed with the call. */
        int fds[CORRAL_RUN_FDS];
        size_t n_fds;
        Call *next;
};

/* One uid's share of the loop's time: charged with the CPU time each of its
 * requests took, refilled with the wall clock. Kept while the uid has connections, and
 * after, until it has refilled: reconnecting does not wipe a debt. */
typedef struct UserBudget {
        uid_t uid;
        int64_t balance;
        uint64_t updated;
        unsigned n_conns;
        unsigned n_held_fds; /* descriptors in its connections' unfinished requests */
        uint64_t billed_usec; /* CPU time billed to it since it was made (server_billed_usec()) */
        struct UserBudget *next;
} UserBudget;

struct Connection {
        Server *server;
        int fd;
        uint32_t events; /* what it is watched for in the server's epoll set, while watched */
        bool watched;
        sd_event_source *idle;
        sd_event_source *backlog_source; /* handles what is buffered, below new requests */
        MessageReader *reader;
        MessageWriter *writer;
        size_t output_max;
        Peer peer;
        UserBudget *budget;
        bool privileged; /* root: connections and held descriptors of its own reserve (authz.c) */
        Call *calls; /* deferred: answered later */
        /* Descriptors received with the first bytes of the next request (SCM_RIGHTS),
         * handed to its Call; at most CORRAL_RUN_FDS, for one request at a time. Until
         * then held (counted in its uid's and the server's n_held_fds), and the request
         * must be complete before fds_deadline. */
        int fds[CORRAL_RUN_FDS];
        size_t n_fds;
        sd_event_source *fds_deadline;
        Connection *next;
        bool dead;
        bool backlog; /* requests may wait in reader: the socket is not read until they are handled */
        bool eof;     /* the peer will send nothing more */
        bool hup;     /* the peer is gone: the io source is off, the backlog source reads the rest */
        /* Output is let out only up to release (positions of message_writer_queued()):
         * a reply leaves once the state it acknowledges is committed and on disk. marked:
         * where the output stood at the last commit not yet on disk (server_mark());
         * syncing: where it stood when the sync under way began (server_sync_begin()). */
        uint64_t release, marked, syncing;
};

/* Descriptors in unfinished requests: all users but root together (Server.n_held_fds),
 * far below the descriptors corrald may hold (its RLIMIT_NOFILE, raised at start-up); each
 * uid's share of them, so that a few users cannot take them all; and root's own reserve,
 * outside the users' bound, so that an administrator's `corral run` is never the one
 * dropped. A request that came with descriptors must be complete SERVER_HELD_FDS_DEADLINE_USEC
 * after they came: otherwise a byte now and then (anything within the idle timeout) would
 * hold them for ever. */
#define SERVER_HELD_FDS_MAX 128U
#define SERVER_HELD_FDS_PER_USER 16U
#define ROOT_RESERVED_HELD_FDS 32U

/* Ready connections taken from the epoll set at once; more wait for the next iteration. */
#define SERVER_BATCH_MAX 64U

struct Server {
        sd_event *event;
        const ServerOps *ops;
        void *userdata;
        ServerLimits limits;
        int listen_fd;
        sd_event_source *listen_source;
        /* The connections are watched by an epoll set of the server's own, one source in
         * the loop: every connection ready is handled in the one iteration that set wakes,
         * where a source per connection cost each request a whole iteration of its own
         * (an epoll_wait() and sd-event's three clock reads). batch: the events being
         * handled, [batch_i, batch_n) still to come; a connection freed meanwhile is
         * blanked out of it. */
        int epoll_fd;
        sd_event_source *conns_source;
        struct epoll_event batch[SERVER_BATCH_MAX];
        size_t batch_i, batch_n;
        sd_event_source *budget_timer; /* when the first paused uid may be served again */
        Connection *conns;
        unsigned n_conns;
        UserBudget *budgets;
        char *path; /* set when we bound the socket ourselves */
        char *notice; /* added to every reply as "warning" (server_set_notice) */
        /* Descriptors received with the first bytes of requests not read whole yet, all
         * unprivileged connections together: a client that never finishes its request
         * holds them until its deadline, so they are bounded (SERVER_HELD_FDS_MAX, and
         * SERVER_HELD_FDS_PER_USER of them per uid) as much as connections are. */
        unsigned n_held_fds;
        FdCloser *fd_closer;
        /* CPU time billed to uids whose budget was forgotten since (server_billed_usec()). */
        uint64_t billed_forgotten_usec;
};

/* Every descriptor a client passed is closed here: on the closer's thread, since its
 * close may wait on a file system's server that the client runs (fd-closer.h). */
static void close_fds(FdCloser *closer, uid_t uid, int *fds, size_t *n) {
        for (size_t i = 0; i < *n; i++) {
                fd_closer_close(closer, fds[i], uid);
                fds[i] = -EBADF;
        }
        *n = 0;
}

static void call_free(Call *c) {
        if (!c)
                return;
        close_fds(c->conn ? c->conn->server->fd_closer : NULL, c->conn ? c->conn->peer.uid : 0, c->fds, &c->n_fds);
        free(c);
}

/* c's descriptors are no longer held in an unfinished request: closed, or handed to its
 * call. */
static void connection_unhold_fds(Connection *c) {
        if (c->n_fds == 0)
                return;
        if (c->budget)
                c->budget->n_held_fds -= (unsigned) c->n_fds;
        if (!c->privileged)
                c->server->n_held_fds -= (unsigned) c->n_fds;
        (void) sd_event_source_set_enabled(c->fds_deadline, SD_EVENT_OFF);
}

/* A connection's descriptors not yet handed to a call: closed, and no longer counted. */
static void connection_close_fds(Connection *c) {
        connection_unhold_fds(c);
        close_fds(c->server->fd_closer, c->peer.uid, c->fds, &c->n_fds);
}

char **peer_group_names(const Peer *peer) {
        char **names = NULL;
        struct group *g = getgrgid(peer->gid);

        if (g && strv_extend(&names, g->gr_name) < 0)
                return strv_free(names);
        for (size_t i = 0; i < peer->n_groups; i++)
                if ((g = getgrgid(peer->groups[i])) && !strv_contains(names, g->gr_name) &&
                    strv_extend(&names, g->gr_name) < 0)
                        return strv_free(names);
        return names ?: new0(char *, 1);
}

/* Balances are kept in hundredths of a microsecond, so that a refill at request_share
 * percent of the clock loses nothing however often it is computed. */
#define BUDGET_UNIT 100

static int64_t budget_burst(const Server *s) {
        return (int64_t) MIN(s->limits.request_burst_usec, UINT64_C(1) << 40) * BUDGET_UNIT;
}

static void budget_refill(Server *s, UserBudget *b, uint64_t now) {
        int64_t burst = budget_burst(s);
        uint64_t gained;

        if (now <= b->updated)
                return;
        gained = MIN(now - b->updated, UINT64_C(1) << 40) * s->limits.request_share;
        b->updated = now;
        if (b->balance >= burst || gained >= (uint64_t) (burst - b->balance))
                b->balance = burst;
        else
                b->balance += (int64_t) gained;
}

static bool budget_enabled(const Server *s) {
        return s->limits.request_share > 0 && s->limits.request_burst_usec > 0;
}

static bool budget_ok(Server *s, UserBudget *b, uint64_t now) {
        if (!budget_enabled(s) || !b)
                return true;
        budget_refill(s, b, now);
        return b->balance > 0;
}

/* When a uid in debt is positive again. */
static uint64_t budget_resume_time(Server *s, const UserBudget *b) {
        return b->updated + (uint64_t) -b->balance / s->limits.request_share + 1;
}

static void budget_charge(Server *s, UserBudget *b, uint64_t usec) {
        if (!b)
                return;
        b->billed_usec += usec;
        if (!budget_enabled(s))
                return;
        /* One request's CPU time, as long as it was; the debt is bounded by a day. */
        b->balance = MAX(b->balance - (int64_t) MIN(usec, UINT64_C(1) << 40) * BUDGET_UNIT,
                         -(int64_t) (86400 * USEC_PER_SEC * BUDGET_UNIT));
}

static UserBudget *budget_get(Server *s, uid_t uid, uint64_t now) {
        UserBudget *b;

        /* Forget the uids that have no connection left and have refilled. */
        for (UserBudget **p = &s->budgets; (b = *p);) {
                budget_refill(s, b, now);
                if (b->n_conns == 0 && b->balance >= budget_burst(s)) {
                        *p = b->next;
                        s->billed_forgotten_usec += b->billed_usec;
                        free(b);
                } else
                        p = &b->next;
        }
        for (b = s->budgets; b; b = b->next)
                if (b->uid == uid)
                        return b;
        b = new0(UserBudget, 1);
        if (!b)
                return NULL;
        *b = (UserBudget) { .uid = uid, .balance = budget_burst(s), .updated = now, .next = s->budgets };
        s->budgets = b;
        return b;
}

static void connection_free(Connection *c) {
        Server *s = c->server;

        for (Connection **p = &s->conns; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        break;
                }
        s->n_conns--;
        if (c->budget)
                c->budget->n_conns--;
        while (c->calls) {
                Call *k = c->calls;
                c->calls = k->next;
                s->ops->call_gone(s->userdata, k);
                call_free(k);
        }
        connection_close_fds(c);
        sd_event_source_disable_unref(c->fds_deadline);
        for (size_t i = s->batch_i; i < s->batch_n; i++)
                if (s->batch[i].data.ptr == c)
                        s->batch[i].data.ptr = NULL;
        if (c->watched)
                (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
        sd_event_source_disable_unref(c->idle);
        sd_event_source_disable_unref(c->backlog_source);
        /* What it still carries unread (descriptors too) is dropped by its close. */
        fd_closer_close(s->fd_closer, c->fd, c->peer.uid);
        c->fd = -EBADF;
        message_reader_free(c->reader);
        message_writer_free(c->writer);
        free(c->peer.groups);
        free(c);
}

unsigned server_n_connections(Server *s) {
        return s->n_conns;
}

/* Whether one more request may be handled now: the largest reply would still fit in the
 * output bound (so a client that does not read is paused, not dropped), and its uid has
 * time left. */
static bool connection_output_room(const Connection *c) {
        return message_writer_pending(c->writer) + CORRAL_MESSAGE_SIZE_MAX + 1 <= c->output_max;
}

static bool connection_may_handle(Connection *c, uint64_t now) {
        return !c->dead && connection_output_room(c) && budget_ok(c->server, c->budget, now);
}

static void server_arm_budget_timer(Server *s, uint64_t when) {
        uint64_t armed;
        int enabled;

        if (!s->budget_timer)
                return;
        if (sd_event_source_get_enabled(s->budget_timer, &enabled) >= 0 && enabled != SD_EVENT_OFF &&
            sd_event_source_get_time(s->budget_timer, &armed) >= 0 && armed <= when)
                return;
        (void) sd_event_source_set_time(s->budget_timer, when);
        (void) sd_event_source_set_enabled(s->budget_timer, SD_EVENT_ONESHOT);
}

/* The loop's time of this iteration: what budgets are checked against. Read once per
 * iteration by sd-event, where a clock read per connection and event was a tenth of a
 * submit's time in the guest (its clock source, the HPET, is a device read). What a
 * request is charged with is measured (connection_process()). */
static uint64_t server_now(Server *s) {
        uint64_t now;

        if (sd_event_now(s->event, CLOCK_MONOTONIC, &now) < 0)
                now = now_usec(CLOCK_MONOTONIC);
        return now;
}

/* Whether output is queued that may leave. A reply queued is not, until its commit (and
 * that commit's sync) let it out: otherwise the next iteration's EPOLLOUT, which sd-event
 * dispatches before the lower-priority post source that commits, would send it first. */
static bool connection_has_released(const Connection *c) {
        return message_writer_written(c->writer) < c->release;
}

/* Watches c's socket for ev in the server's epoll set, or no more (NULL ev after a hang-up:
 * a hang-up is reported whatever is asked for). Only changes reach the kernel. */
static void connection_watch(Connection *c, const uint32_t *ev) {
        struct epoll_event e = { .data.ptr = c };

        if (!ev) {
                if (c->watched && epoll_ctl(c->server->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL) >= 0)
                        c->watched = false;
                return;
        }
        if (c->watched && c->events == *ev)
                return;
        e.events = *ev;
        if (epoll_ctl(c->server->epoll_fd, c->watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &e) < 0) {
                log_debug_errno(errno, "Dropping a connection that cannot be watched: %m");
                c->dead = true;
                return;
        }
        c->watched = true;
        c->events = *ev;
}

/* What the connection waits for, from its state: new requests only when nothing is
 * buffered and it may be served, its backlog when it may be served, output while any is
 * queued, its uid's refill when that is what holds it. */
static void connection_update_events(Connection *c) {
        Server *s = c->server;
        uint64_t now = server_now(s);
        bool may = connection_may_handle(c, now);
        uint32_t ev = 0;

        if (connection_has_released(c))
                ev |= EPOLLOUT;
        if (may && !c->backlog && !c->eof)
                ev |= EPOLLIN;
        if (!c->hup)
                connection_watch(c, &ev);
        (void) sd_event_source_set_enabled(c->backlog_source, may && c->backlog ? SD_EVENT_ONESHOT : SD_EVENT_OFF);
        if (!c->dead && !budget_ok(s, c->budget, now))
                server_arm_budget_timer(s, budget_resume_time(s, c->budget));
}

/* Frees c when it is done: broken, or at EOF with everything it sent handled and its
 * replies out (or with calls kept for it: nobody is left to answer). True if freed. */
static bool connection_finish(Connection *c) {
        if (c->dead || (c->eof && !c->backlog && (c->calls || message_writer_pending(c->writer) == 0))) {
                connection_free(c);
                return true;
        }
        return false;
}

static int queue(Connection *c, json_object *reply) {
        int r;

        if (c->server->notice && json_object_is_type(reply, json_type_object))
                (void) json_object_object_add(reply, CORRAL_FIELD_WARNING,
                                              json_object_new_string(c->server->notice));
        r = message_writer_queue(c->writer, reply);
        json_object_put(reply);
        if (r < 0) {
                /* A client that reads nothing while we stream to it: drop it. */
                c->dead = true;
                return r;
        }
        return 0;
}

static json_object *reply_oneway_refused(const char *method) {
        json_object *p = json_object_new_object();

        json_add_string(p, CORRAL_FIELD_METHOD, method);
        json_add_string(p, CORRAL_FIELD_MESSAGE,
                        "this method's only product is its reply: call it without \"oneway\"");
        return reply_error_new(CORRAL_ERROR_ONEWAY_REFUSED, p);
}

static void handle_message(Connection *c, const char *text, size_t len) {
        Server *s = c->server;
        Request req = {};
        CorralError err;
        json_object *reply = NULL;
        Call *call;
        int r;

        r = request_parse(text, len, &req, &err);
        if (r >= 0 && c->n_fds > 0 && !(s->ops->takes_fds && s->ops->takes_fds(req.method))) {
                /* Descriptors are taken by one method only, never held for another. */
                connection_close_fds(c);
                (void) queue(c, reply_invalid_request("only Run takes file descriptors"));
                request_done(&req);
                return;
        }
        if (r < 0) {
                connection_close_fds(c);
                if (err == CORRAL_ERROR_METHOD_NOT_FOUND)
                        reply = reply_method_not_found(req.method_name ?: "");
                else if (err == CORRAL_ERROR_PROTOCOL_VERSION_MISMATCH)
                        reply = reply_protocol_version_mismatch(0);
                else
                        reply = reply_invalid_request("malformed request: expected a JSON object with "
                                                      "\"method\" and \"parameters\"");
                request_done(&req);
                if (reply)
                        (void) queue(c, reply);
                return;
        }
        /* A oneway call of such a method would be work for nobody, and the cheapest way
         * to make corrald work without ever reading a reply (and so without the output
         * bound that pauses a client that does not read). Said once, here. */
        if (req.oneway && s->ops->reply_only && s->ops->reply_only(req.method)) {
                connection_close_fds(c);
                (void) queue(c, reply_oneway_refused(req.method_name ?: ""));
                request_done(&req);
                return;
        }
        call = new0(Call, 1);
        if (!call) {
                request_done(&req);
                c->dead = true;
                return;
        }
        memcpy(call->fds, c->fds, sizeof c->fds);
        call->n_fds = c->n_fds;
        connection_unhold_fds(c);
        c->n_fds = 0;
        call->conn = c;
        call->more = req.more;
        call->oneway = req.oneway;
        r = s->ops->dispatch(s->userdata, call, &c->peer, req.method, req.parameters, &reply);
        if (r < 0)
                reply = reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        if (reply) {
                call_free(call);
                if (!req.oneway)
                        (void) queue(c, reply);
                else
                        json_object_put(reply);
        } else {
                call->next = c->calls;
                c->calls = call;
        }
        request_done(&req);
}

/* The loop thread's CPU time: what a request is charged with. Not the clock: a request
 * during which the machine stalls (a host that deschedules its guest, jobs that take the
 * CPUs from corrald, a journal that is slow to take a log line) cost corrald nothing, and
 * charging the stall put its user (root too) in a debt that paced their next requests
 * for minutes. */
static uint64_t loop_cpu_usec(void) {
        return now_usec(CLOCK_THREAD_CPUTIME_ID);
}

/* Bills b (a connection's uid: a budget outlives its connections, so c may be freed by
 * now) with the loop's CPU time since *clock, which moves to now. Each connection's turn
 * is read at its start and its end: what its handling cost, a flush and a teardown
 * included, is its own uid's, never the next connection's. */
static void bill_since(Server *s, UserBudget *b, uint64_t *clock) {
        uint64_t now = loop_cpu_usec();

        if (now > *clock)
                budget_charge(s, b, now - *clock);
        *clock = now;
}

/* Frees c outside its turn (a timer's): its teardown (a kept call's cancellation, its
 * descriptors' closing) billed to its uid. */
static void connection_free_billed(Connection *c) {
        Server *s = c->server;
        UserBudget *b = c->budget;
        uint64_t clock = loop_cpu_usec();

        connection_free(c);
        bill_since(s, b, &clock);
}

/* Whether c may hold n more descriptors in an unfinished request: within its uid's share
 * and the users' bound, or root's reserve. */
static bool connection_may_hold_fds(Connection *c, size_t n) {
        unsigned mine = c->budget ? c->budget->n_held_fds : 0;

        if (c->privileged)
                return mine + n <= ROOT_RESERVED_HELD_FDS;
        return mine + n <= SERVER_HELD_FDS_PER_USER && c->server->n_held_fds + n <= SERVER_HELD_FDS_MAX;
}

static int on_fds_deadline(sd_event_source *es, uint64_t usec, void *userdata) {
        Connection *c = userdata;

        /* Complete and waiting its turn (its uid's budget, its output room): handled then. */
        if (c->n_fds == 0 || message_reader_has_message(c->reader))
                return 0;
        log_debug("Dropping a connection of uid %u: its request with descriptors is not complete after %" PRIu64 " s.",
                  (unsigned) c->peer.uid, SERVER_HELD_FDS_DEADLINE_USEC / USEC_PER_SEC);
        connection_free_billed(c);
        return 0;
}

/* c's descriptors (c->fds, c->n_fds), just received, are held until its request is
 * complete, and counted; by the deadline at the latest. */
static int connection_hold_fds(Connection *c) {
        Server *s = c->server;
        int r;

        if (c->budget)
                c->budget->n_held_fds += (unsigned) c->n_fds;
        if (!c->privileged)
                s->n_held_fds += (unsigned) c->n_fds;
        if (!c->fds_deadline)
                return sd_event_add_time_relative(s->event, &c->fds_deadline, CLOCK_MONOTONIC,
                                                  SERVER_HELD_FDS_DEADLINE_USEC, 0, on_fds_deadline, c);
        r = sd_event_source_set_time_relative(c->fds_deadline, SERVER_HELD_FDS_DEADLINE_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(c->fds_deadline, SD_EVENT_ONESHOT);
        return r;
}

/* Handles what c has buffered, reading from its socket at most once, and stops at
 * messages_per_wakeup requests, at SERVER_SLICE_USEC of CPU time, when its output bound
 * is reached or when its uid's budget is spent; what is left is its backlog, handled by a
 * later iteration. Each request is charged to the uid with the CPU time it took (parsing,
 * dispatch, serializing the reply). *clock: the loop's CPU time it starts at, read by the
 * caller (or where the connection handled before it in the same iteration ended), and on
 * return the last read, so that a request costs one clock read. */
static void connection_process(Connection *c, uint64_t *clock) {
        Server *s = c->server;
        unsigned limit = s->limits.messages_per_wakeup ?: SERVER_MESSAGES_PER_WAKEUP, handled = 0;
        uint64_t start = *clock, now = start, last = start;
        bool have_read = false;

        for (;;) {
                char *msg;
                size_t len;
                int k, r;

                if (c->dead)
                        break;
                if (handled >= limit || (handled > 0 && now - start >= SERVER_SLICE_USEC) ||
                    !connection_may_handle(c, server_now(s))) {
                        c->backlog = true;
                        break;
                }
                k = message_reader_next(c->reader, &msg, &len);
                if (k == 0) {
                        if (c->eof || have_read) {
                                /* Gone peers are read through here to their EOF. */
                                c->backlog = c->hup && !c->eof;
                                break;
                        }
                        {
                                bool empty = message_reader_is_empty(c->reader);
                                size_t n = 0;
                                int fds[MESSAGE_RECV_FDS_MAX];

                                r = message_reader_fill_fds(c->reader, c->fd, fds, CORRAL_RUN_FDS, &n);
                                if (r < 0)
                                        /* Refused (too many, another kind of control
                                         * message) or out of memory: the connection goes,
                                         * and what came with it the closer's way. */
                                        close_fds(c->server->fd_closer, c->peer.uid, fds, &n);
                                /* Descriptors belong to the request whose first bytes they
                                 * came with (the kernel delivers them with the first byte of
                                 * the send that carried them): so nothing may be buffered
                                 * before them, nor descriptors be waiting already. Anything
                                 * else is a client we cannot follow: dropped. */
                                if (n > 0 && (!empty || c->n_fds > 0)) {
                                        close_fds(c->server->fd_closer, c->peer.uid, fds, &n);
                                        r = -EBADMSG;
                                }
                                if (n > 0 && !connection_may_hold_fds(c, n)) {
                                        log_debug("Dropping a connection of uid %u: %u descriptors already "
                                                  "wait in its unfinished requests, %u in all users'.",
                                                  (unsigned) c->peer.uid, c->budget ? c->budget->n_held_fds : 0,
                                                  s->n_held_fds);
                                        close_fds(c->server->fd_closer, c->peer.uid, fds, &n);
                                        r = -EMFILE;
                                }
                                if (n > 0) {
                                        memcpy(c->fds, fds, n * sizeof(int));
                                        c->n_fds = n;
                                        if (connection_hold_fds(c) < 0)
                                                r = -ENOMEM; /* closed with the connection */
                                }
                        }
                        have_read = true;
                        if (r == -EAGAIN) {
                                c->backlog = false;
                                break;
                        }
                        if (r == 0)
                                c->eof = true;
                        else if (r < 0) {
                                c->dead = true;
                                break;
                        }
                        continue;
                }
                if (k == -EMSGSIZE) {
                        connection_close_fds(c);
                        (void) queue(c, reply_message_too_large());
                }
                else if (k < 0) {
                        c->dead = true;
                        break;
                } else {
                        handle_message(c, msg, len);
                        free(msg);
                }
                handled++;
                now = loop_cpu_usec();
                budget_charge(s, c->budget, now - last);
                last = now;
        }
        *clock = now;
        if (!c->dead && (handled > 0 || have_read))
                (void) sd_event_source_set_time_relative(c->idle, IDLE_TIMEOUT_USEC);
}
static int on_idle(sd_event_source *s, uint64_t usec, void *userdata) {
        Connection *c = userdata;

        /* Waiting for a job, or for its uid's budget, is not idling; waiting for the
         * client to read its replies is. */
        if (c->calls || (c->backlog && connection_output_room(c)))
                return sd_event_source_set_time_relative(s, IDLE_TIMEOUT_USEC);
        log_debug("Closing idle connection of uid %u.", (unsigned) c->peer.uid);
        connection_free_billed(c);
        return 0;
}

/* What epoll reported for c. */
static void connection_event_handle(Connection *c, uint32_t revents, uint64_t *clock) {
        int r;

        if (connection_has_released(c) && (revents & (EPOLLOUT | EPOLLHUP | EPOLLERR))) {
                r = message_writer_flush_upto(c->writer, c->fd, c->release);
                if (r < 0 && r != -EAGAIN) {
                        connection_free(c);
                        return;
                }
        }
        if (revents & (EPOLLHUP | EPOLLERR)) {
                /* Reported whatever events are asked for: from here on what the peer left
                 * is read through the backlog source, so that a connection that may not be
                 * served now does not wake every iteration. */
                c->hup = c->backlog = true;
                connection_watch(c, NULL);
        }
        if ((revents & EPOLLIN) && !c->backlog)
                connection_process(c, clock);
        if (connection_finish(c))
                return;
        (void) sd_event_source_set_time_relative(c->idle, IDLE_TIMEOUT_USEC);
        /* Output waits for the post-iteration commit (server_flush(), server_sync_end()). */
        connection_update_events(c);
}

/* c's turn, all of it billed to its uid. *clock: where it starts, on return where it
 * ended (the next connection's start). */
static void connection_event(Connection *c, uint32_t revents, uint64_t *clock) {
        Server *s = c->server;
        UserBudget *b = c->budget;

        connection_event_handle(c, revents, clock);
        bill_since(s, b, clock);
}

/* The epoll set is ready: every connection in it that is, in this one iteration. */
static int on_connections(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        Server *s = userdata;
        uint64_t clock;
        int n;

        n = epoll_wait(s->epoll_fd, s->batch, ELEMENTSOF(s->batch), 0);
        if (n < 0)
                return 0; /* EINTR: still ready, the next iteration */
        clock = loop_cpu_usec();
        s->batch_n = (size_t) n;
        for (s->batch_i = 0; s->batch_i < s->batch_n; s->batch_i++) {
                Connection *c = s->batch[s->batch_i].data.ptr;
                if (c)
                        connection_event(c, s->batch[s->batch_i].events, &clock);
        }
        s->batch_i = s->batch_n = 0;
        return 0;
}

static int on_backlog(sd_event_source *s, void *userdata) {
        Connection *c = userdata;
        Server *server = c->server;
        UserBudget *b = c->budget;
        uint64_t clock = loop_cpu_usec();

        connection_process(c, &clock);
        if (!connection_finish(c))
                connection_update_events(c);
        bill_since(server, b, &clock);
        return 0;
}

static int on_budget_timer(sd_event_source *es, uint64_t usec, void *userdata) {
        Server *s = userdata;

        for (Connection *c = s->conns; c; c = c->next)
                connection_update_events(c);
        return 0;
}

static int peer_identity(int fd, Peer *p) {
        struct ucred cred;
        socklen_t n = sizeof cred;
        gid_t groups[256];
        socklen_t gn = sizeof groups;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &n) < 0)
                return negative_errno();
        p->uid = cred.uid;
        p->gid = cred.gid;
        /* The peer's supplementary groups as the kernel saw them at connect time. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &gn) >= 0 && gn > 0) {
                p->n_groups = gn / sizeof(gid_t);
                p->groups = new(gid_t, p->n_groups);
                if (!p->groups)
                        return -ENOMEM;
                memcpy(p->groups, groups, p->n_groups * sizeof(gid_t));
        }
        return 0;
}

static void refuse(int fd, json_object *reply) {
        char *text;
        size_t len;

        if (message_serialize(reply, CORRAL_MESSAGE_SIZE_MAX, &text, &len) >= 0) {
                (void) send(fd, text, len, MSG_NOSIGNAL | MSG_DONTWAIT);
                free(text);
        }
        json_object_put(reply);
        safe_close(fd);
}

static int on_accept(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        Server *s = userdata;
        Connection *c;
        UserBudget *b;
        unsigned same_uid = 0, per_uid;
        bool unlimited;
        int cfd, r;
        Peer peer = {};
        uint64_t clock;

        cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0)
                return 0;
        clock = loop_cpu_usec();
        if (peer_identity(cfd, &peer) < 0) {
                safe_close(cfd);
                return 0;
        }
        for (Connection *k = s->conns; k; k = k->next)
                if (k->peer.uid == peer.uid)
                        same_uid++;
        per_uid = s->limits.connections_per_user;
        /* Root reaches a flooded corrald through connections kept for it (authz.c). */
        unlimited = authz_check(&(AuthzPeer) { .uid = peer.uid }, AUTHZ_EXCEED_LIMITS, NULL, NULL) == 0;
        if (unlimited ? s->n_conns >= CORRAL_CONNECTIONS_MAX + ROOT_RESERVED_CONNECTIONS
                      : s->n_conns >= CORRAL_CONNECTIONS_MAX || (per_uid && same_uid >= per_uid)) {
                json_object *p = json_object_new_object();
                bool global = s->n_conns >= CORRAL_CONNECTIONS_MAX;
                json_add_u64(p, CORRAL_FIELD_LIMIT, global ? CORRAL_CONNECTIONS_MAX : per_uid);
                json_add_string(p, CORRAL_FIELD_MESSAGE,
                                global ? "corrald has as many connections as it serves at once"
                                       : "you have as many connections open as allowed (MaxConnectionsPerUser=)");
                log_warning("Refusing a connection of uid %u: too many connections.", (unsigned) peer.uid);
                free(peer.groups);
                refuse(cfd, reply_error_new(CORRAL_ERROR_TOO_MANY_CONNECTIONS, p));
                return 0;
        }
        c = new0(Connection, 1);
        if (!c) {
                free(peer.groups);
                safe_close(cfd);
                return 0;
        }
        c->server = s;
        c->fd = cfd;
        c->peer = peer;
        c->privileged = unlimited;
        c->reader = message_reader_new(CORRAL_MESSAGE_SIZE_MAX);
        /* Replies a slow client may leave unread before it is dropped (Wait streams, list
         * pages): bounded per connection, so the daemon's memory is bounded by the
         * connection caps times this. Requests are handled only while one more reply
         * fits, so only streams ever reach it. */
        c->output_max = MAX(s->limits.connection_output, CORRAL_MESSAGE_SIZE_MAX + 1);
        c->writer = message_writer_new(c->output_max);
        c->next = s->conns;
        s->conns = c;
        s->n_conns++;
        c->budget = budget_get(s, peer.uid, server_now(s));
        if (c->budget)
                c->budget->n_conns++;
        if (!c->reader || !c->writer || !c->budget ||
            (r = sd_event_add_time_relative(s->event, &c->idle, CLOCK_MONOTONIC, IDLE_TIMEOUT_USEC, 0,
                                            on_idle, c)) < 0 ||
            (r = sd_event_add_defer(s->event, &c->backlog_source, on_backlog, c)) < 0 ||
            (r = sd_event_source_set_enabled(c->backlog_source, SD_EVENT_OFF)) < 0 ||
            /* New requests first: a backlog is what a client sent beyond its turn. */
            (r = sd_event_source_set_priority(c->backlog_source, SD_EVENT_PRIORITY_IDLE)) < 0) {
                connection_free(c);
                return 0;
        }
        b = c->budget;
        connection_update_events(c);
        if (c->dead)
                connection_free(c);
        /* Accepting (its credentials, its groups) is the new connection's. */
        bill_since(s, b, &clock);
        return 0;
}

/* Lets out each connection's output up to what release() says, and writes what it can. */
static void release_all(Server *s, uint64_t (*release)(Connection *c)) {
        for (Connection *c = s->conns, *next; c; c = next) {
                UserBudget *b = c->budget;
                uint64_t clock;

                next = c->next;
                if (!c->dead) {
                        c->release = MAX(c->release, release(c));
                        if (!connection_has_released(c)) {
                                if (!connection_finish(c))
                                        connection_update_events(c);
                                continue;
                        }
                }
                /* Writing and tearing down: the connection's uid's (two clock reads, only
                 * for the connections that have something to write or are done). */
                clock = loop_cpu_usec();
                if (c->dead)
                        connection_free(c);
                else {
                        int r = message_writer_flush_upto(c->writer, c->fd, c->release);
                        if (r < 0 && r != -EAGAIN)
                                connection_free(c);
                        else if (!connection_finish(c))
                                connection_update_events(c);
                }
                bill_since(s, b, &clock);
        }
}

static uint64_t upto_queued(Connection *c) {
        return message_writer_queued(c->writer);
}

static uint64_t upto_syncing(Connection *c) {
        return c->syncing;
}

void server_flush(Server *s) {
        release_all(s, upto_queued);
}

void server_mark(Server *s) {
        for (Connection *c = s->conns; c; c = c->next)
                c->marked = message_writer_queued(c->writer);
}

void server_sync_begin(Server *s) {
        for (Connection *c = s->conns; c; c = c->next)
                c->syncing = c->marked;
}

void server_sync_end(Server *s) {
        release_all(s, upto_syncing);
}

int server_call_reply(Call *call, json_object *reply, bool continues) {
        Connection *c = call->conn;
        int r = 0;

        if (call->oneway)
                json_object_put(reply);
        else
                r = queue(c, reply);

        if (!continues) {
                for (Call **p = &c->calls; *p; p = &(*p)->next)
                        if (*p == call) {
                                *p = call->next;
                                break;
                        }
                call_free(call);
        }
        return r;
}

size_t server_call_take_fds(Call *c, int fds[static CORRAL_RUN_FDS]) {
        size_t n = c->n_fds;

        memcpy(fds, c->fds, n * sizeof(int));
        c->n_fds = 0;
        return n;
}

bool server_call_more(Call *c) {
        return c->more;
}
void *server_call_get_data(Call *c) {
        return c->data;
}
void server_call_set_data(Call *c, void *data) {
        c->data = data;
}
unsigned server_call_n_deferred(Call *c) {
        unsigned n = 0;
        for (Call *k = c->conn->calls; k; k = k->next)
                n++;
        return n;
}
uint64_t server_call_job_id(Call *c) {
        return c->job_id;
}
void server_call_set_job_id(Call *c, uint64_t id) {
        c->job_id = id;
}

void server_foreach_waiting(Server *s, uint64_t job_id, void (*cb)(Call *c, void *userdata), void *userdata) {
        for (Connection *c = s->conns; c; c = c->next)
                for (Call *k = c->calls, *next; k; k = next) {
                        next = k->next; /* cb may answer and free k */
                        if (k->job_id == job_id)
                                cb(k, userdata);
                }
}

void server_bill(Server *s, uid_t uid, uint64_t usec) {
        UserBudget *b = NULL;

        for (UserBudget *k = s->budgets; k; k = k->next)
                if (k->uid == uid) {
                        b = k;
                        break;
                }
        /* A caller with no connection left: a budget of its own, kept while in debt. */
        if (!b)
                b = budget_get(s, uid, server_now(s));
        budget_charge(s, b, usec);
}

uint64_t server_billed_usec(Server *s, uid_t uid) {
        for (UserBudget *b = s->budgets; b; b = b->next)
                if (b->uid == uid)
                        return b->billed_usec;
        return 0;
}

uint64_t server_billed_total_usec(Server *s) {
        uint64_t t = s->billed_forgotten_usec;

        for (UserBudget *b = s->budgets; b; b = b->next)
                t += b->billed_usec;
        return t;
}

void server_foreach_billed(Server *s, void (*cb)(uid_t uid, uint64_t usec, void *userdata), void *userdata) {
        for (UserBudget *b = s->budgets; b; b = b->next)
                cb(b->uid, b->billed_usec, userdata);
}

static int bind_socket(const char *path) {
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_free_ char *dir = strdup(path);
        char *slash;

        if (!dir)
                return -ENOMEM;
        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = 0;
                if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                        return negative_errno();
        }
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        (void) unlink(path);
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return negative_errno();
        /* Everyone may connect; who may do what is decided per request. */
        if (chmod(path, 0666) < 0 || listen(fd, SOMAXCONN) < 0)
                return negative_errno();
        return TAKE_FD(fd);
}

void server_set_limits(Server *s, const ServerLimits *limits) {
        s->limits = *limits;
        for (Connection *c = s->conns; c; c = c->next)
                connection_update_events(c);
}

void server_set_fd_closer(Server *s, FdCloser *closer) {
        s->fd_closer = closer;
}

int server_set_notice(Server *s, const char *notice) {
        char *n = NULL;

        if (notice && !(n = strdup(notice)))
                return -ENOMEM;
        free(s->notice);
        s->notice = n;
        return 0;
}

int server_new(sd_event *event, const char *socket_path, const ServerOps *ops, void *userdata, Server **ret) {
        Server *s = new0(Server, 1);
        int n, r;

        if (!s)
                return -ENOMEM;
        s->event = sd_event_ref(event);
        s->ops = ops;
        s->userdata = userdata;
        s->limits = (ServerLimits) { .connections_per_user = 32, .connection_output = 4U << 20 };
        s->listen_fd = -EBADF;
        s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        if (s->epoll_fd < 0) {
                r = negative_errno();
                server_free(s);
                return r;
        }
        r = sd_event_add_io(event, &s->conns_source, s->epoll_fd, EPOLLIN, on_connections, s);
        if (r < 0) {
                server_free(s);
                return r;
        }
        r = sd_event_add_time(event, &s->budget_timer, CLOCK_MONOTONIC, 0, 1000, on_budget_timer, s);
        if (r < 0) {
                server_free(s);
                return r;
        }
        (void) sd_event_source_set_enabled(s->budget_timer, SD_EVENT_OFF);
        n = socket_path ? 0 : sd_listen_fds(true);
        if (n > 1) {
                server_free(s);
                return -E2BIG;
        }
        if (n == 1)
                s->listen_fd = SD_LISTEN_FDS_START;
        else {
                const char *p = socket_path ?: CORRAL_SOCKET_PATH;
                r = bind_socket(p);
                if (r < 0) {
                        server_free(s);
                        return r;
                }
                s->listen_fd = r;
                s->path = strdup(p);
        }
        (void) fcntl(s->listen_fd, F_SETFL, fcntl(s->listen_fd, F_GETFL) | O_NONBLOCK);
        r = sd_event_add_io(event, &s->listen_source, s->listen_fd, EPOLLIN, on_accept, s);
        if (r < 0) {
                server_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

Server *server_free(Server *s) {
        if (!s)
                return NULL;
        while (s->conns)
                connection_free(s->conns);
        while (s->budgets) {
                UserBudget *b = s->budgets;
                s->budgets = b->next;
                free(b);
        }
        sd_event_source_disable_unref(s->budget_timer);
        sd_event_source_disable_unref(s->listen_source);
        sd_event_source_disable_unref(s->conns_source);
        safe_close(s->epoll_fd);
        safe_close(s->listen_fd);
        if (s->path)
                (void) unlink(s->path);
        free(s->path);
        free(s->notice);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}
