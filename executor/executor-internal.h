/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

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

        Launch *launches; /* in flight: waiting for systemd */
        Control *force_kills; /* cancels that SIGKILL the scope if it outlives the grace */

        int results_inotify_fd;
        sd_event_source *results_source;
};

struct Launch {
        Executor *executor;
        uint64_t job_id;
        char *unit;
        pid_t pid;
        int sync_fd; /* write end: 'G' lets the supervisor go */
        bool retried;
        struct ExecProperties *props;
        sd_bus_slot *call_slot;
        sd_event_source *child_source;
        Launch *next;
};

int executor_unit_name(uint64_t job_id, char **ret);
void executor_outcome_seen(Executor *e, uint64_t job_id);
void executor_drop_force_kills(Executor *e);
