/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Projects (Slurm's accounts), one file each: <confdir>/projects.d/<name>.conf, INI like
 * corral.conf (corral-projects(5)):
 *
 *   [Project]  Members= (user names, @group for a unix group's members), DefaultFor=
 *              (users whose default project this is), Share=, Grant=, GrantPeriod=,
 *              GrantStart=, OnGrantSpent=bonus|refuse, Queues= (which it may use)
 *   [Limits]   MaxCPUs=, MaxMemory=, MaxGPUs=, MaxRunningJobs= (the project's jobs together),
 *              MaxCPUsPerUser=, MaxMemoryPerUser=, MaxGPUsPerUser=, MaxRunningJobsPerUser=,
 *              MaxJobsPerUser=, MaxIdleJobsPerUser=, MaxPSSoft=, MaxPSHard= (each member's
 *              jobs in it), MaxWalltime= (each job)
 *   [User]     Name= and the keys of [Limits], for that member (each replaces the
 *              [Limits] value for them; MaxCPUs= there is their CPUs in the project)
 *   [Slice]    AllowedCPUs=, MemoryMax=, MemoryHigh=, CPUWeight=, IOWeight=, TasksMax=:
 *              set on corral-<name>.slice, which the kernel enforces
 *
 * Without any project file, every unix group is a project, as before projects existed. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpuset.h"
#include "macro.h"
#include "sched/sched.h"

typedef struct ProjectUser {
        char *name;
        SchedLimits limits;
} ProjectUser;

typedef struct SliceConfig {
        bool have_allowed_cpus;
        CpuSet allowed_cpus;
        uint64_t memory_max, memory_high; /* 0: not set */
        uint64_t cpu_weight, io_weight;   /* 0: not set */
        uint64_t tasks_max;               /* 0: not set */
} SliceConfig;

typedef struct ProjectConfig {
        char *name;
        char **members;         /* "alice", "@physics" */
        char **default_for;
        char **queues;          /* NULL: every queue */
        uint32_t share;
        uint64_t grant;         /* service units per period; 0: none */
        uint64_t grant_period;  /* seconds */
        uint64_t grant_start;   /* seconds since the epoch */
        bool grant_refuse;      /* OnGrantSpent=refuse; else bonus */
        SchedLimits total, per_user;
        ProjectUser *users;
        size_t n_users;
        SliceConfig slice;
} ProjectConfig;

void project_config_done(ProjectConfig *p);

/* Loads every .conf file of dir in lexical order into *ret (n in *ret_n; none: NULL, 0).
 * Errors as "file:line: what" in *ret_error, -EINVAL. */
int projects_load(const char *dir, ProjectConfig **ret, size_t *ret_n, char **ret_error);

/* Membership: user by name, or through one of their groups (gids, with names looked up
 * by the caller's lookup function so tests need no /etc/group). */
bool project_has_member(const ProjectConfig *p, const char *user, const char *const *group_names);
bool project_allows_queue(const ProjectConfig *p, const char *queue);
