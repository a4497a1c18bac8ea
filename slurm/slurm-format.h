/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The pure parts of the Slurm front ends (the commands in slurm/): Slurm's state names, its time
 * formats, squeue's and sinfo's "%[.][width]c" format strings, squeue's -O and sacct's
 * field lists, each rendered byte for byte as Slurm's tools print them, because
 * workflow managers parse that output. No I/O but to the FILE given, no clock (now is an
 * argument): tests/unit/test-slurm-format.c checks every field. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "macro.h"
#include "proto/job-request.h"

/* A Corral state as Slurm names it (HELD and BLOCKED are Slurm's PENDING, with the reason
 * saying why); unknown names pass through. */
const char *slurm_state_name(const char *corral_state) _pure_;
/* squeue's %t: PD R S CD F CA TO OOM NF. */
const char *slurm_state_compact(const char *corral_state) _pure_;
/* Whether a Slurm state name or code (squeue -t, sacct -s) matches a Corral state. */
bool slurm_state_matches(const char *slurm_name, const char *corral_state) _pure_;
/* Whether Slurm takes name as a job state (squeue -t, sacct -s): its long names and
 * codes, those Corral never has included, and "all". */
bool slurm_state_is_known(const char *name) _pure_;

/* squeue's TIME and TIME_LIMIT: "M:SS", "H:MM:SS", "D-HH:MM:SS". */
char *slurm_format_secs(char *buf, size_t size, uint64_t sec);
/* sacct's Elapsed, CPUTime and Timelimit: "HH:MM:SS", "D-HH:MM:SS". */
char *slurm_format_elapsed(char *buf, size_t size, uint64_t sec);
/* sacct's TotalCPU: "MM:SS.mmm" under an hour, else as Elapsed. */
char *slurm_format_cpu_usec(char *buf, size_t size, uint64_t usec);
/* "YYYY-MM-DDTHH:MM:SS" in local time, or "Unknown" for 0. */
char *slurm_format_time(char *buf, size_t size, uint64_t t);

/* One item of a format: text, or a field with its width (0: as long as it is) and
 * justification. */
typedef struct SlurmFormatItem {
        char *text;             /* literal text; NULL for a field */
        char field;             /* %c (squeue -o, sinfo -o) */
        char *name;             /* squeue -O and sacct -o field names */
        int width;              /* 0: not given */
        bool right;             /* "%.N": right justified */
} SlurmFormatItem;

typedef struct SlurmFormat {
        SlurmFormatItem *items;
        size_t n;

        /* sacct's rendering options, set by the caller after parsing. */
        const char *delimiter;  /* --delimiter: between -p/-P fields; NULL: "|" */
        char units;             /* --units: K, M, G, T or P for memory sizes; 0: as they come */
        /* The group name of a uid (Group); NULL: the field is empty. */
        const char *(*group_of)(uid_t uid);
} SlurmFormat;

void slurm_format_done(SlurmFormat *f);

/* "%.18i %.9P %8j text %%": -EINVAL for a '%' without a field letter. The letters are
 * not checked here: the renderers do (an unknown letter is an error there, as Slurm). */
int slurm_format_parse(const char *s, SlurmFormat *ret);
/* squeue -O: "JobID,Name:30,State:.10,Account:\x1F,..."; default width 20, left
 * justified; what follows a width (or the colon) is printed after the field, as Slurm's
 * suffix. */
int slurm_format_parse_long(const char *s, SlurmFormat *ret);
/* sacct -o/--format and sacctmgr format=: "JobIDRaw,State,Account%20". */
int slurm_fields_parse(const char *s, SlurmFormat *ret);

/* Pads or cuts value to the item's width, as squeue and sinfo print a field. */
void slurm_print_field(FILE *f, const SlurmFormatItem *it, const char *value);

/* squeue's default -o and the one -l uses. */
#define SQUEUE_FORMAT_DEFAULT "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
#define SQUEUE_FORMAT_LONG "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
#define SINFO_FORMAT_DEFAULT "%9P %.5a %.10l %.6D %.6t %N"
/* sinfo -R: Slurm's, the nodes with a reason only. */
#define SINFO_FORMAT_REASONS "%20E %9u %19H %N"
#define SACCT_FORMAT_DEFAULT "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"

/* What squeue knows of a job beyond JobInfo. */
typedef struct SqueueJob {
        const JobInfo *info;
        double priority;
        bool has_priority;
        const char *group;      /* %g: the owner's primary group; NULL: "(null)" */
        uint32_t gid;           /* %G */
        bool noconvert;         /* --noconvert: %m in megabytes, never converted to G */
} SqueueJob;

/* Checks a parsed squeue format: -EINVAL with *ret_bad set to the unknown letter or name. */
int squeue_format_check(const SlurmFormat *f, const char **ret_bad);
/* Whether a format shows what only a job's details hold (its comment, command, working
 * directory): the caller fetches them (Show) for those formats alone. */
bool squeue_format_needs_details(const SlurmFormat *f) _pure_;
/* Prints the header line (when header) and one line per job. */
int squeue_print(FILE *out, const SlurmFormat *f, const SqueueJob *jobs, size_t n, bool header, time_t now);

/* sacct. The checks and rendering of its fields. */
int sacct_fields_check(const SlurmFormat *f, const char **ret_bad);
typedef enum SacctStyle {
        SACCT_FIXED,            /* columns, with a header and a dashed line */
        SACCT_PARSABLE,         /* -p: "a|b|" */
        SACCT_PARSABLE2,        /* -P: "a|b" */
} SacctStyle;
/* The value of one field for a job (the caller's buffer); NULL for an unknown name. */
const char *sacct_field_value(const char *name, const JobInfo *j, time_t now, char *buf, size_t size);
int sacct_print(FILE *out, const SlurmFormat *f, const JobInfo *const *jobs, size_t n, SacctStyle style,
                bool header, time_t now);
/* The same printing for any rows of strings (sacctmgr): values[row * f->n + column]. */
int slurm_fields_print(FILE *out, const SlurmFormat *f, const char *const *values, size_t n_rows,
                       SacctStyle style, bool header);

/* sinfo: one partition per queue on one node. */
typedef struct SinfoPartition {
        const char *name;
        bool is_default;
        uint64_t max_walltime;  /* seconds; 0: infinite */
        const char *node;
        unsigned cpus, cpus_allocated;
        uint64_t memory;        /* bytes */
        const char *gres;       /* %G: sinfo_format_gres(); NULL: "(null)", no GPUs */
        const char *gres_used;  /* -O GresUsed: sinfo_format_gres_used(); NULL: "(null)" */
        /* %E, %u, %H: why the node is not wholly Corral's (a GPU in use outside it), the
         * user behind that and when it was seen; NULL: none ("none", "Unknown"). */
        const char *reason, *reason_user;
        uint64_t reason_time;
} SinfoPartition;

struct DeviceInfo;
/* The node's GRES as sinfo prints them: "gpu:TYPE:N" for each type, the type being the
 * one Slurm's autodetection derives from the model ("gpu:nvidia_a100-sxm4-40gb:4"),
 * "gpu:N" for devices of no known model, comma-separated in the order they come. An
 * empty string for no devices. */
char *sinfo_format_gres(const struct DeviceInfo *devices, size_t n, char *buf, size_t size);

/* The node's GRES in use as sinfo's GresUsed prints them: "gpu:TYPE:N(IDX:0,2-3)" for each
 * type, N the devices a job holds and IDX their indices ("N/A" for none). "" for no devices. */
char *sinfo_format_gres_used(const struct DeviceInfo *devices, size_t n, char *buf, size_t size);

int sinfo_format_check(const SlurmFormat *f, const char **ret_bad);
/* sinfo -O: "NodeHost:100,Gres:.20,StateLong", names as Slurm's (any case), default width
 * 20, no separator. -EINVAL with *ret_bad the unknown name (valid until f is freed). */
int sinfo_format_parse_long(const char *s, SlurmFormat *ret, const char **ret_bad);
int sinfo_print(FILE *out, const SlurmFormat *f, const SinfoPartition *parts, size_t n, bool header);

/* The version of Slurm whose commands and formats Corral's emulate (Debian 12's). */
#define SLURM_EMULATED_VERSION "22.05.8"

/* scontrol show job: Slurm's "Key=Value" lines; oneliner (-o): the record on one line. */
int scontrol_show_job(FILE *out, const JobInfo *j, time_t now, bool oneliner);

/* scontrol show config: what corrald and its configuration say, under Slurm's keys. */
typedef struct ShowConfig {
        const char *hostname;           /* ClusterName, SlurmctldHost */
        const char *policy;             /* corrald's: fcfs (sched/builtin) or a backfill */
        uint32_t max_array_size;        /* tasks in one array */
        uint64_t min_job_age_sec;       /* how long a final job stays in corrald's memory */
        uint64_t sched_interval_sec;    /* corrald's periodic scheduling pass */
} ShowConfig;
/* "Configuration data as of TIME", then one "Key = Value" line per key, the key
 * left-justified in 23 columns, as Slurm 22.05's scontrol; it has no one-line form. */
int scontrol_show_config(FILE *out, const ShowConfig *c, time_t now);
/* scontrol show partition: one SinfoPartition (a queue on this node). */
int scontrol_show_partition(FILE *out, const SinfoPartition *p, bool oneliner);

/* scontrol show node: this machine. */
typedef struct ShowNode {
        const char *name;
        unsigned cpus, cpus_allocated;
        uint64_t memory;                /* bytes */
        const char *gres;               /* sinfo_format_gres(); NULL or "": none */
        const char *partitions;         /* comma-separated */
} ShowNode;
int scontrol_show_node(FILE *out, const ShowNode *n, bool oneliner);

/* sacct -S/-E, Slurm's forms: "now", "now{+|-}N[seconds|minutes|hours|days|weeks]" (N
 * alone: seconds), "today"/"midnight", "noon", "elevenses", "fika", "teatime",
 * "YYYY-MM-DD[THH:MM[:SS]]", "HH:MM[:SS][AM|PM]" (today), "MM/DD[/YY]", "MM.DD[.YY]",
 * "MMDD[YY]", each of these three optionally "-HH:MM[:SS]"; in local time. -EINVAL
 * otherwise. */
int slurm_parse_time(const char *s, time_t now, uint64_t *ret);
