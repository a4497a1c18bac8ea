/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The varlink-style socket: accepts connections (socket-activated or bound by us),
 * frames messages, learns the peer from SO_PEERCRED/SO_PEERGROUPS, enforces size, count
 * and idle limits, and hands requests to its owner through an ops table (it knows
 * nothing of jobs). Replies are queued and only sent once the owner has committed the
 * state they acknowledge and that commit is on disk (server_flush(), or server_mark()
 * and a sync's server_sync_begin() and server_sync_end()).
 *
 * No client can hold the event loop: each wakeup of a connection handles at most
 * SERVER_MESSAGES_PER_WAKEUP requests (and SERVER_SLICE_USEC of work), the rest waits
 * in its buffer for a later iteration, after other connections' new requests; a
 * connection is neither read nor served while its unread replies could not take one
 * more, nor while its user has spent their share of the loop's time (a token bucket
 * per uid, charged with the CPU time each connection's turn took, and what server_bill()
 * adds). See corrald(8), "LIMITS". */

#include <json-c/json.h>
#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "protocol.h"

typedef struct Server Server;
typedef struct Call Call;
typedef struct FdCloser FdCloser;

/* Who is calling, as the kernel said at connect time. */
typedef struct Peer {
        uid_t uid;
        gid_t gid;
        gid_t *groups;
        size_t n_groups;
} Peer;

/* The names of the peer's groups (primary first), looked up now; an empty list, never
 * NULL, but for out of memory. */
char **peer_group_names(const Peer *peer);

typedef struct ServerOps {
        /* One request. Either sets *ret_reply now or keeps call and answers later with
         * server_call_reply(); returns -errno only for internal failures, which the
         * server turns into InternalError. */
        int (*dispatch)(void *userdata, Call *call, const Peer *peer, CorralMethod method, json_object *params,
                        json_object **ret_reply);
        /* A kept call's client went away: the call is freed after this returns. */
        void (*call_gone)(void *userdata, Call *call);
        /* Whether the method's only product is its reply: "oneway" on it is refused
         * (OnewayRefused) before dispatch. NULL: every method may be called oneway. */
        bool (*reply_only)(CorralMethod method);
        /* Whether the method takes descriptors (SCM_RIGHTS, at most CORRAL_RUN_FDS, with
         * the request's first bytes); any other method that gets some has them closed
         * and is refused (InvalidRequest) before dispatch. NULL: none does. */
        bool (*takes_fds)(CorralMethod method);
} ServerOps;

#define SERVER_MESSAGES_PER_WAKEUP 16U
/* By when a request that came with descriptors must be complete, from their arrival. */
#define SERVER_HELD_FDS_DEADLINE_USEC (10 * UINT64_C(1000000))
#define SERVER_SLICE_USEC (10 * UINT64_C(1000))

typedef struct ServerLimits {
        unsigned connections_per_user;  /* root is exempt; 0: no limit but the global one */
        size_t connection_output;       /* unread reply bytes before a client is dropped */
        unsigned messages_per_wakeup;   /* 0: SERVER_MESSAGES_PER_WAKEUP */
        /* Each uid's budget of the loop's time: charged with the loop thread's CPU
         * time per request, it refills at request_share percent of the wall clock up to
         * request_burst_usec; a connection is served while its uid's balance is
         * positive. request_share 0: no budget. */
        unsigned request_share;
        uint64_t request_burst_usec;
} ServerLimits;

int server_new(sd_event *event, const char *socket_path, const ServerOps *ops, void *userdata, Server **ret);
void server_set_limits(Server *s, const ServerLimits *limits);
/* Where the descriptors clients pass are closed (fd-closer.h); without one, in place. */
void server_set_fd_closer(Server *s, FdCloser *closer);
/* A notice every reply carries from now on, in the envelope's "warning" (the CLI prints
 * it on stderr): NULL for none. */
int server_set_notice(Server *s, const char *notice);
Server *server_free(Server *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Server *, server_free);

/* Sends what has been queued: everything it acknowledges is on disk. */
void server_flush(Server *s);
/* What has been queued so far acknowledges what is committed and not yet on disk: it is
 * sent when the sync that covers it ends. A sync begins (covering every commit so far,
 * hence everything marked so far) and ends; what was queued after the last mark waits
 * for a later one. */
void server_mark(Server *s);
void server_sync_begin(Server *s);
void server_sync_end(Server *s);

/* Deferred replies. continues: more replies follow (streaming). Takes ownership of reply. */
int server_call_reply(Call *c, json_object *reply, bool continues);
/* Hands over the descriptors that came with the request (the caller closes them):
 * their number. What is not taken is closed with the call. */
size_t server_call_take_fds(Call *c, int fds[static CORRAL_RUN_FDS]);
/* The request asked for more replies (a stream). */
bool server_call_more(Call *c);
void *server_call_get_data(Call *c);
void server_call_set_data(Call *c, void *data);
uint64_t server_call_job_id(Call *c);
/* Calls of c's connection that wait for a later answer (not counting c itself). */
unsigned server_call_n_deferred(Call *c);
void server_call_set_job_id(Call *c, uint64_t id);
/* Iterates over deferred calls waiting on job id (Wait). */
void server_foreach_waiting(Server *s, uint64_t job_id, void (*cb)(Call *c, void *userdata), void *userdata);
unsigned server_n_connections(Server *s);

/* CPU time corrald spent for uid outside its connections' own turns on the loop (a Usage
 * report's worker thread, its completion on the loop): billed to uid and charged to its
 * budget, as its requests are. */
void server_bill(Server *s, uid_t uid, uint64_t usec);
/* CPU time billed to uid so far, while its budget is kept (it has connections, or a debt
 * left): 0 after. The total counts every uid, forgotten ones included. */
uint64_t server_billed_usec(Server *s, uid_t uid);
uint64_t server_billed_total_usec(Server *s);
void server_foreach_billed(Server *s, void (*cb)(uid_t uid, uint64_t usec, void *userdata), void *userdata);
