/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* What the executor's files share: the Executor itself, and the few calls the life cycle
 * (lifecycle.c) and the outcome reader (results.c) make into the parts that own the
 * in-flight work. launch.c and control.c know nothing of each other. */

#include "executor.h"

typedef struct Launch Launch;
typedef struct Control Control;

struct Executor {
        sd_event *event;
        sd_bus *bus;
        ExecutorConfig config;
        char *supervisor_path, *run_dir, *cgroup_root, *before_unit;
        int cgroup_root_fd;
        sd_bus_slot *job_removed_slot;
        unsigned systemd_version;

        Launch *launches; /* in flight: waiting for systemd; owned by launch.c */
        int fork_fd; /* fork-server.c: the socket to the supervisors' fork server */
        sd_event_source *fork_io, *fork_child;
        bool fork_failed; /* it could not be started, or died: spawn each supervisor */
        Control *force_kills; /* cancels that SIGKILL the scope if it outlives the grace; control.c's */

        int results_inotify_fd;
        sd_event_source *results_source;
        bool outcomes_unread; /* results.c: an outcome left for want of memory */

        char **held_slices; /* slice-hold.c: the project slices whose hold was started */

        uint64_t mail_seq; /* mail.c: numbers its units */
        uint64_t command_seq; /* run-command.c: numbers its units */
};

/* launch.c */
/* Matches JobRemoved for the launches; called once, before any launch can be in flight. */
int executor_watch_job_removed(Executor *e);
void executor_drop_launches(Executor *e);

/* The fork server's answer for a job (fork-server.c): pid and pidfd (taken; -EBADF for
 * none), or error, a positive errno. */
void executor_forked(Executor *e, uint64_t job_id, pid_t pid, int pidfd, int error);
/* The fork server has gone: the launches waiting for it spawn their supervisors. */
void executor_fork_server_lost(Executor *e);

/* fork-server.c */
/* Asks the fork server (started on first use) for a job's supervisor, sync_fd its end of
 * the sync pipe (not taken); the answer comes to executor_forked(). <0: spawn it instead. */
int executor_fork_request(Executor *e, uint64_t job_id, int sync_fd);
void executor_fork_server_stop(Executor *e);

/* slice-hold.c */
/* Starts, once per project slice, the slice that keeps its cgroup controllers enabled
 * between jobs; before the slice's scopes, on the same bus. */
int executor_hold_slice(Executor *e, const char *slice);

/* control.c */
void executor_outcome_seen(Executor *e, uint64_t job_id);
void executor_drop_force_kills(Executor *e);
