/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* What the Slurm front ends share: start-up (messages as "squeue: error: ..."), the
 * client of corral(1) (cli/client.h), and fetching jobs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "commands.h"
#include "slurm-format.h"

/* Sets up logging under the tool's name and the Cli of corral(1) with verb (for the
 * messages of corrald's error replies). */
void slurm_setup(const char *tool, Cli *cli, const char *verb);
/* The calling user's name (--me), newly allocated; reports and returns NULL if unknown. */
char *slurm_my_name(void);

/* "error: " in front, as Slurm's tools write: "squeue: error: ...". */
#define slurm_error(fmt, ...) log_error("error: " fmt, ##__VA_ARGS__)

/* Slurm's commands exit 1 on any error; corral's codes (2: usage, 3: corrald unreachable,
 * cli-util.h) become that. */
static inline int slurm_exit_status(int status) {
        return status == 0 ? 0 : 1;
}
#define SLURM_MAIN(run)                                      \
        int main(int argc, char *argv[]) {                   \
                return slurm_exit_status(run(argc, argv));   \
        }

/* Lists the jobs with filter (taken; NULL: every job corrald still knows, finished ones
 * included) and, with details, fetches each one with Show (usage, paths: what List does
 * not send). Returns 0, or an exit status (already reported). */
int slurm_list_jobs(Cli *cli, json_object *filter, bool details, JobList *ret);

/* The primary group of uid, as Slurm's job records hold the submitter's: its gid, and its
 * name in a static buffer (NULL when unknown). The last uid is remembered. */
void slurm_owner_group(uid_t uid, uint32_t *ret_gid, const char **ret_name);

/* Whether a comma list (as "-u alice,bob", "-j 4,5", "-t R,PD") contains s. NULL: all. */
bool slurm_list_contains(const char *list, const char *s);
/* The job ids of a comma list ("4,5_2"): their JobRef. -EINVAL for a bad one. */
int slurm_parse_job_list(const char *list, JobRef **ret, size_t *ret_n);
/* sacct -j: adds the ids of list to *refs (grown); a step ("42.batch", "42.0") is valid
 * and only counted in *n_steps, there being no steps here. -EINVAL for a bad one. */
int slurm_add_job_list(const char *list, JobRef **refs, size_t *n, size_t *n_steps);
bool slurm_job_matches_refs(const JobInfo *j, const JobRef *refs, size_t n);

/* A field of a GetInfo reply (or of one of its queues): 0 or NULL when it is missing or of
 * another type. */
uint64_t slurm_json_u64(json_object *o, const char *key);
const char *slurm_json_str(json_object *o, const char *key);
/* corrald's GetInfo in *reply: 0, or the exit status (the error said). */
int slurm_get_info(Cli *cli, Reply *reply);
/* -M/--clusters NAMES: each "all" or this machine's cluster, the ClusterName of scontrol
 * show config (corrald's host name, in any case); another is refused as not on a single
 * machine. 0 with the name in *ret_name (allocated; NULL: not wanted), or the exit status
 * (the error said). */
int slurm_check_clusters(Cli *cli, const char *clusters, char **ret_name);

/* GetInfo in *reply, the CPUs its active jobs hold, its GPUs as sinfo's GRES ("" for none)
 * and, where gres_used is not NULL, as its GresUsed: 0, or the exit status (the error said). */
int slurm_machine_state(Cli *cli, Reply *reply, unsigned *ret_allocated, char *gres, size_t gres_size,
                        char *gres_used, size_t gres_used_size);
/* The node's reason, from GetInfo's parameters: each GPU in use outside Corral (GPU
 * telemetry's last reading), "gpu0 in use outside Corral: pid 4242 (root)", "; "
 * between GPUs, in buf (cut at size); the first such process's user in *ret_user (a
 * pointer into params), the reading's time in *ret_time. false: none. */
bool slurm_node_reason(json_object *params, char *buf, size_t size, const char **ret_user, uint64_t *ret_time);
