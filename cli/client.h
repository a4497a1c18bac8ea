/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* corral(1)'s side of the socket: a blocking-with-deadline client for the protocol in
 * proto/protocol.h, and the mapping of every failure (transport or error reply) to a
 * message that says what to do and an exit status (cli-util.h). */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "macro.h"
#include "proto/message.h"

/* How long connecting and each non-streaming call may take. */
#define CLIENT_TIMEOUT_MS_DEFAULT (30 * 1000)

typedef struct Client Client;

/* $CORRAL_SOCKET when set and not empty, else CORRAL_SOCKET_PATH. */
const char *client_socket_path(void);

/* -ENAMETOOLONG for a path that does not fit sockaddr_un, -ETIMEDOUT, or connect's
 * -errno. Nothing is logged. */
int client_connect(const char *path, int timeout_ms, Client **ret);
Client *client_free(Client *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Client *, client_free);
#define _cleanup_client_ _cleanup_(client_freep)

const char *client_path(const Client *c) _pure_;

/* Sends one request (takes parameters' reference). -ETIMEDOUT, -EPIPE, -EMSGSIZE. */
int client_send(Client *c, CorralMethod method, json_object *parameters, bool more, int timeout_ms);
/* The same with descriptors (at most CORRAL_RUN_FDS) passed along with the request's
 * first byte (SCM_RIGHTS): Run's. The caller keeps its copies. */
int client_send_fds(Client *c, CorralMethod method, json_object *parameters, bool more, const int *fds,
                    size_t n_fds, int timeout_ms);
/* The socket, to poll it beside other descriptors (then client_receive() with 0). */
int client_fd(const Client *c) _pure_;
/* Waits for the next reply; timeout_ms < 0 waits forever. -ETIMEDOUT, -ECONNRESET when
 * the daemon hung up, -EBADMSG for a malformed reply, -EMSGSIZE for an over-size one. */
int client_receive(Client *c, int timeout_ms, Reply *ret);

/* The state of one invocation of corral(1), shared by its verbs. */
typedef struct Cli {
        const char *verb;       /* for messages: "cancel", "submit", ... */
        bool json;              /* --json: print replies as JSON */
        int timeout_ms;
        const char *socket_path;        /* NULL: client_socket_path() */
        Client *client;         /* connected on first use */
        bool warned;            /* the daemon's warning was printed (once per command) */
} Cli;

void cli_done(Cli *cli);

/* Connects on first use and sends method(parameters), waiting up to cli->timeout_ms for
 * the reply. Returns 0 when a reply came (it may be an error reply: check ret->error),
 * or a negative errno after logging why the daemon could not be reached. */
int cli_call(Cli *cli, CorralMethod method, json_object *parameters, Reply *ret);
/* List, page after page (corrald answers at most about 768 KiB at a time), as one reply
 * with all the jobs. Takes filter. An error reply is returned as the daemon sent it. */
int cli_call_list(Cli *cli, json_object *filter, Reply *ret);
/* The same from the job after `after` (0: the first), and at most max jobs (0: all); when
 * more are left, the reply's "next_after_id" says where the next page starts. */
int cli_call_list_page(Cli *cli, json_object *filter, uint64_t after, uint64_t max, Reply *ret);
/* For streams: cli_send(..., more=true), then cli_receive() with no deadline. */
int cli_send(Cli *cli, CorralMethod method, json_object *parameters, bool more);
int cli_receive(Cli *cli, int timeout_ms, Reply *ret);

/* The exit status for a negative errno from the calls above. */
int cli_exit_status_from_errno(int r) _const_;

/* Logs an error reply as "corral: <subject>: <what happened> (<what to do>)" and returns
 * its exit status: CLI_EXIT_USAGE for InvalidParameter, CLI_EXIT_UNREACHABLE for Busy and
 * TooManyConnections (try again later), CLI_EXIT_FAILURE otherwise. subject: e.g.
 * "job 42", or NULL for the verb. */
int cli_report_error(const Cli *cli, const char *subject, const Reply *reply);
/* The message alone (malloc'ed), as cli_report_error() would log it after "corral: ". */
char *cli_error_message(const char *verb, const char *subject, const Reply *reply);
int cli_error_exit_status(const Reply *reply) _pure_;

/* Logs "Out of memory." and returns CLI_EXIT_FAILURE. */
int cli_oom(void);

/* Prints v to stdout: pretty on a terminal, one line otherwise (for jq and friends). */
int cli_print_json(json_object *v);
/* The same, as a verb's exit status. */
int cli_print_json_status(json_object *v);

/* cli_call() for a verb: 0 with the reply in *ret, or, the call failed or the reply is an
 * error (reported as cli_report_error() does, with subject), the verb's exit status. */
int cli_call_reply(Cli *cli, CorralMethod method, json_object *parameters, const char *subject, Reply *ret);
