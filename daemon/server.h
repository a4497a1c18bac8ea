/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The varlink-style socket: accepts connections (socket-activated or bound by us),
 * frames messages, learns the peer from SO_PEERCRED/SO_PEERGROUPS, enforces size, count
 * and idle limits, and hands requests to the manager. Replies are queued and only sent
 * after the manager has committed the state they acknowledge (server_flush). */

#include <json-c/json.h>
#include <systemd/sd-event.h>

#include "manager.h"

int server_new(Manager *m, const char *socket_path, Server **ret);
Server *server_free(Server *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Server *, server_free);

/* Sends what has been queued; called after each store commit. */
void server_flush(Server *s);

/* Deferred replies. continues: more replies follow (streaming). Takes ownership of reply. */
int server_call_reply(Call *c, json_object *reply, bool continues);
void *server_call_get_data(Call *c);
void server_call_set_data(Call *c, void *data);
uint64_t server_call_job_id(Call *c);
/* Calls of c's connection that wait for a later answer (not counting c itself). */
unsigned server_call_n_deferred(Call *c);
void server_call_set_job_id(Call *c, uint64_t id);
/* Iterates over deferred calls waiting on job id (Wait). */
void server_foreach_waiting(Server *s, uint64_t job_id, void (*cb)(Call *c, void *userdata), void *userdata);
unsigned server_n_connections(Server *s);
