/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Interactive jobs (corral run, srun --pty, salloc, qsub -I): the Run method's side in
 * corrald. A job made by Run keeps, while it waits, the three descriptors its client
 * passed (checked by interactive-fd.c); they are handed to its supervisor when it starts
 * and closed here. The Run call streams the job's changes to the client; when the client
 * goes away the job is withdrawn (pending) or, InteractiveHangupSec= later, cancelled
 * (running). Nothing of this is stored: after a restart of corrald an interactive job has
 * no client (nor, while it waits, descriptors) and is ended (corrald(8)). */

#include <json-c/json.h>

#include "interactive-job.h"
#include "server.h"

typedef struct Manager Manager;
typedef struct Job Job;

/* Takes the Run call's descriptors and checks them against the caller: NULL with *ret
 * set, or the error reply. */
json_object *manager_interactive_take(Manager *m, Call *call, const Peer *peer, Interactive **ret);
/* Submit's reply for the job: an error is returned as it is; else the job keeps it, the
 * reply goes out as the first of the stream and NULL is returned (the call is kept). */
json_object *manager_interactive_attach(Manager *m, Call *call, Interactive *it, json_object *reply);
/* A call's client went away: if it was an interactive job's Run call, the job is withdrawn
 * or its grace period begins. */
void manager_interactive_call_gone(Manager *m, Call *call);
/* At start-up, after the running jobs are re-adopted: interactive jobs have no client
 * any more (their Run calls went with the last corrald). Waiting ones are withdrawn, as
 * their descriptors are gone; running ones get the grace period, as after a hangup. */
void manager_interactive_startup(Manager *m);
