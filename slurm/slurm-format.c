/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli-util.h"
#include "proto/device-info.h"
#include "slurm-format.h"
#include "text-util.h"

/* ---- States ---- */

static const struct {
        const char *corral, *slurm, *compact;
} states[] = {
        { "PENDING", "PENDING", "PD" },
        { "HELD", "PENDING", "PD" },
        { "BLOCKED", "PENDING", "PD" },
        { "RUNNING", "RUNNING", "R" },
        { "SUSPENDED", "SUSPENDED", "S" },
        { "COMPLETED", "COMPLETED", "CD" },
        { "FAILED", "FAILED", "F" },
        { "CANCELLED", "CANCELLED", "CA" },
        { "TIMEOUT", "TIMEOUT", "TO" },
        { "OUT_OF_MEMORY", "OUT_OF_MEMORY", "OOM" },
        { "NODE_FAIL", "NODE_FAIL", "NF" },
};

const char *slurm_state_name(const char *corral_state) {
        for (size_t i = 0; i < ELEMENTSOF(states); i++)
                if (streq_ptr(states[i].corral, corral_state))
                        return states[i].slurm;
        return corral_state ?: "UNKNOWN";
}

const char *slurm_state_compact(const char *corral_state) {
        for (size_t i = 0; i < ELEMENTSOF(states); i++)
                if (streq_ptr(states[i].corral, corral_state))
                        return states[i].compact;
        return "?";
}

bool slurm_state_matches(const char *slurm_name, const char *corral_state) {
        if (!slurm_name || !corral_state)
                return false;
        if (strcaseeq(slurm_name, "all"))
                return true;
        /* Corral's own names (HELD, BLOCKED) work too. */
        return strcaseeq(slurm_name, corral_state) || strcaseeq(slurm_name, slurm_state_name(corral_state)) ||
               strcaseeq(slurm_name, slurm_state_compact(corral_state));
}

/* Every job state Slurm 22.05's job_state_num() takes, long and compact: clients list
 * states Corral never has (batchtools' "-t PD,CF,RF,RH,RQ,SE"), and Slurm accepts them. */
static const char *const slurm_known_states[] = {
        "PENDING", "PD", "RUNNING", "R", "SUSPENDED", "S", "COMPLETED", "CD", "CANCELLED", "CA",
        "FAILED", "F", "TIMEOUT", "TO", "NODE_FAIL", "NF", "PREEMPTED", "PR", "BOOT_FAIL", "BF",
        "DEADLINE", "DL", "OUT_OF_MEMORY", "OOM", "COMPLETING", "CG", "CONFIGURING", "CF",
        "RESIZING", "RS", "REQUEUED", "RQ", "REQUEUE_FED", "RF", "REQUEUE_HOLD", "RH",
        "SPECIAL_EXIT", "SE", "STOPPED", "ST", "REVOKED", "RV", "RESV_DEL_HOLD", "RD",
        "SIGNALING", "SI", "STAGE_OUT", "SO", "UPDATE_DB", "UD", "POWER_UP_NODE", "PU",
};

bool slurm_state_is_known(const char *name) {
        if (!name)
                return false;
        if (strcaseeq(name, "all"))
                return true;
        for (size_t i = 0; i < ELEMENTSOF(slurm_known_states); i++)
                if (strcaseeq(name, slurm_known_states[i]))
                        return true;
        return false;
}

/* ---- Times ---- */

char *slurm_format_secs(char *buf, size_t size, uint64_t sec) {
        uint64_t d = sec / 86400, h = sec / 3600 % 24, m = sec / 60 % 60, s = sec % 60;

        if (d > 0)
                snprintf(buf, size, "%" PRIu64 "-%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64, d, h, m, s);
        else if (h > 0)
                snprintf(buf, size, "%" PRIu64 ":%02" PRIu64 ":%02" PRIu64, h, m, s);
        else
                snprintf(buf, size, "%" PRIu64 ":%02" PRIu64, m, s);
        return buf;
}

char *slurm_format_elapsed(char *buf, size_t size, uint64_t sec) {
        uint64_t d = sec / 86400, h = sec / 3600 % 24, m = sec / 60 % 60, s = sec % 60;

        if (d > 0)
                snprintf(buf, size, "%" PRIu64 "-%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64, d, h, m, s);
        else
                snprintf(buf, size, "%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64, h, m, s);
        return buf;
}

char *slurm_format_cpu_usec(char *buf, size_t size, uint64_t usec) {
        uint64_t sec = usec / 1000000;

        if (sec >= 3600)
                return slurm_format_elapsed(buf, size, sec);
        snprintf(buf, size, "%02" PRIu64 ":%02" PRIu64 ".%03" PRIu64, sec / 60, sec % 60, usec / 1000 % 1000);
        return buf;
}

char *slurm_format_time(char *buf, size_t size, uint64_t t) {
        struct tm tm;
        time_t tt = (time_t) t;

        if (t == 0 || !localtime_r(&tt, &tm) || strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
                snprintf(buf, size, "Unknown");
        return buf;
}

static bool walltime_is_unlimited(uint64_t sec) {
        return sec == 0 || sec >= CORRAL_WALLTIME_INFINITY;
}

/* ---- Format strings ---- */

void slurm_format_done(SlurmFormat *f) {
        if (!f)
                return;
        for (size_t i = 0; i < f->n; i++) {
                free(f->items[i].text);
                free(f->items[i].name);
        }
        f->items = mfree(f->items);
        f->n = 0;
}

static int format_add(SlurmFormat *f, SlurmFormatItem it) {
        SlurmFormatItem *n = reallocarray(f->items, f->n + 1, sizeof(SlurmFormatItem));

        if (!n) {
                free(it.text);
                free(it.name);
                return -ENOMEM;
        }
        f->items = n;
        f->items[f->n++] = it;
        return 0;
}

static int add_text(SlurmFormat *f, const char *s, size_t n) {
        char *t;

        if (n == 0)
                return 0;
        t = strndup(s, n);
        if (!t)
                return -ENOMEM;
        return format_add(f, (SlurmFormatItem) { .text = t });
}

/* "[.]digits" at *p; advances it. */
static int parse_width(const char **p, int *ret_width, bool *ret_right) {
        const char *s = *p;
        long w = 0;

        *ret_right = false;
        if (*s == '.') {
                *ret_right = true;
                s++;
        }
        while (*s >= '0' && *s <= '9') {
                w = w * 10 + (*s - '0');
                if (w > 1024)
                        return -EINVAL;
                s++;
        }
        *ret_width = (int) w;
        *p = s;
        return 0;
}

int slurm_format_parse(const char *s, SlurmFormat *ret) {
        _cleanup_(slurm_format_done) SlurmFormat f = {};
        const char *p = s, *lit = s;
        int r;

        assert(ret);

        if (!s)
                return -EINVAL;
        while (*p) {
                SlurmFormatItem it = {};

                if (*p != '%') {
                        p++;
                        continue;
                }
                if (p[1] == '%') {
                        /* "%%" is a percent sign. */
                        r = add_text(&f, lit, (size_t) (p - lit) + 1);
                        if (r < 0)
                                return r;
                        p += 2;
                        lit = p;
                        continue;
                }
                r = add_text(&f, lit, (size_t) (p - lit));
                if (r < 0)
                        return r;
                p++;
                if (parse_width(&p, &it.width, &it.right) < 0)
                        return -EINVAL;
                if (!*p || !((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
                        return -EINVAL;
                it.field = *p++;
                r = format_add(&f, it);
                if (r < 0)
                        return r;
                lit = p;
        }
        r = add_text(&f, lit, (size_t) (p - lit));
        if (r < 0)
                return r;
        if (f.n == 0)
                return -EINVAL;
        *ret = f;
        f = (SlurmFormat) {};
        return 0;
}

/* A comma list of NAME<sep>WIDTH items; sep is ':' (squeue -O, "Name:.20") or '%'
 * (sacct, "Account%20"). */
static int parse_named(const char *s, char sep, int default_width, SlurmFormat *ret) {
        _cleanup_(slurm_format_done) SlurmFormat f = {};
        const char *p = s;
        int r;

        if (!s || !*s)
                return -EINVAL;
        for (;;) {
                size_t n = strcspn(p, ",");
                size_t name_len = strcspn(p, sep == ':' ? ":," : "%,");
                SlurmFormatItem it = { .width = default_width };
                const char *suffix = NULL;
                size_t suffix_len = 0;

                if (name_len > n)
                        name_len = n;
                if (name_len == 0)
                        return -EINVAL;
                it.name = strndup(p, name_len);
                if (!it.name)
                        return -ENOMEM;
                if (name_len < n) {
                        const char *w = p + name_len + 1;
                        bool neg = false;

                        if (sep == '%' && *w == '-') {
                                neg = true;
                                w++;
                        }
                        if (parse_width(&w, &it.width, &it.right) < 0 || (sep == '%' && w != p + n) ||
                            (sep == '%' && it.right)) {
                                free(it.name);
                                return -EINVAL;
                        }
                        /* squeue -O "JobID:\x1F": what follows the width is printed after
                         * the field, as Slurm's suffix (Open OnDemand separates its fields
                         * so). */
                        suffix = w;
                        suffix_len = (size_t) (p + n - w);
                        /* sacct: a given width is right justified, "%-N" left. */
                        if (sep == '%') {
                                it.right = !neg;
                                it.width = it.width == 0 ? default_width : it.width;
                        }
                } else if (sep == '%')
                        it.width = 0; /* the field's own default, chosen when printing */
                r = format_add(&f, it);
                if (r < 0)
                        return r;
                r = add_text(&f, suffix, suffix_len);
                if (r < 0)
                        return r;
                p += n;
                if (!*p)
                        break;
                p++;
                if (!*p)
                        break; /* "a,b," as Slurm allows */
        }
        *ret = f;
        f = (SlurmFormat) {};
        return 0;
}

int slurm_format_parse_long(const char *s, SlurmFormat *ret) {
        return parse_named(s, ':', 20, ret);
}

int slurm_fields_parse(const char *s, SlurmFormat *ret) {
        return parse_named(s, '%', 0, ret);
}

void slurm_print_field(FILE *f, const SlurmFormatItem *it, const char *value) {
        _cleanup_free_ char *e = NULL;

        /* squeue's and sinfo's values: escaped, so a job name cannot command the terminal. */
        if (!text_is_safe(value)) {
                e = text_escape(value);
                value = e ?: "?";
        }
        value = value ?: "";
        if (it->width <= 0)
                fputs(value, f);
        else if (it->right)
                fprintf(f, "%*.*s", it->width, it->width, value);
        else
                fprintf(f, "%-*.*s", it->width, it->width, value);
}

/* ---- squeue ---- */

static const struct {
        char letter;
        const char *header;
        const char *long_name; /* -O */
} squeue_fields[] = {
        { 'i', "JOBID", "JobID" },
        { 'A', "JOBID", "JobIDRaw" },
        { 'F', "ARRAY_JOB_ID", "ArrayJobID" },
        { 'K', "ARRAY_TASK_ID", "ArrayTaskID" },
        { 'j', "NAME", "Name" },
        { 'u', "USER", "UserName" },
        { 'U', "UID", "UID" },
        { 'a', "ACCOUNT", "Account" },
        { 'P', "PARTITION", "Partition" },
        { 't', "ST", "StateCompact" },
        { 'T', "STATE", "State" },
        { 'M', "TIME", "TimeUsed" },
        { 'l', "TIME_LIMIT", "TimeLimit" },
        { 'L', "TIME_LEFT", "TimeLeft" },
        { 'D', "NODES", "NumNodes" },
        { 'C', "CPUS", "NumCPUs" },
        { 'c', "MIN_CPUS", "MinCpus" },
        { 'm', "MIN_MEMORY", "MinMemory" },
        { 'R', "NODELIST(REASON)", "ReasonList" },
        { 'N', "NODELIST", "NodeList" },
        { 'r', "REASON", "Reason" },
        { 'S', "START_TIME", "StartTime" },
        { 'V', "SUBMIT_TIME", "SubmitTime" },
        { 'e', "END_TIME", "EndTime" },
        { 'Q', "PRIORITY", "PriorityLong" },
        { 'y', "NICE", "Nice" },
        { 'q', "QOS", "QOS" },
        { 'b', "TRES_PER_NODE", "tres-per-node" },
        { 'B', "EXEC_HOST", "BatchHost" },
        { 'd', "MIN_TMP_DISK", "MinTmpDisk" },
        { 'E', "DEPENDENCY", "Dependency" },
        { 'f', "FEATURES", "Feature" },
        { 'g', "GROUP", "GroupName" },
        { 'G', "GROUP", "GroupID" },
        { 'h', "OVER_SUBSCRIBE", "OverSubscribe" },
        { 'H', "SOCKETS_PER_NODE", "Sockets" },
        { 'I', "CORES_PER_SOCKET", "Cores" },
        { 'J', "THREADS_PER_CORE", "Threads" },
        { 'k', "COMMENT", "Comment" },
        { 'n', "REQ_NODES", "ReqNodes" },
        { 'o', "COMMAND", "Command" },
        { 'O', "CONTIGUOUS", "Contiguous" },
        { 'v', "RESERVATION", "Reservation" },
        { 'w', "WCKEY", "WCKey" },
        { 'W', "LICENSES", "Licenses" },
        { 'x', "EXC_NODES", "ExcNodes" },
        { 'X', "CORE_SPEC", "CoreSpec" },
        { 'Y', "SCHEDNODES", "SchedNodes" },
        { 'z', "S:C:T", "SCT" },
        { 'Z', "WORK_DIR", "WorkDir" },
        /* -O names without a letter of their own (the digits cannot come from -o). */
        { 'i', "JOBID", "JobArrayID" },
        { 'U', "UID", "UserID" },
        { '1', "TRES_ALLOC", "tres-alloc" },
        { '1', "TRES_ALLOC", "tres" },
};

static int squeue_field_index(const SlurmFormatItem *it) {
        for (size_t i = 0; i < ELEMENTSOF(squeue_fields); i++)
                if (it->name ? strcaseeq(it->name, squeue_fields[i].long_name) : it->field == squeue_fields[i].letter)
                        return (int) i;
        return -1;
}

int squeue_format_check(const SlurmFormat *f, const char **ret_bad) {
        static char letter[2];

        for (size_t i = 0; i < f->n; i++) {
                const SlurmFormatItem *it = &f->items[i];
                if (it->text || squeue_field_index(it) >= 0)
                        continue;
                if (ret_bad) {
                        letter[0] = it->field;
                        *ret_bad = it->name ?: letter;
                }
                return -EINVAL;
        }
        return 0;
}

bool squeue_format_needs_details(const SlurmFormat *f) {
        for (size_t i = 0; i < f->n; i++) {
                int k = f->items[i].text ? -1 : squeue_field_index(&f->items[i]);
                if (k >= 0 && strchr("koZ", squeue_fields[k].letter))
                        return true;
        }
        return false;
}

/* Memory as Slurm's convert_num_unit() writes megabytes: "500M", "4G". */
static char *format_megabytes(char *buf, size_t size, uint64_t bytes) {
        static const char units[] = "MGTP";
        uint64_t v = bytes >> 20;
        size_t u = 0;

        while (v >= 1024 && v % 1024 == 0 && u + 1 < sizeof(units) - 1) {
                v /= 1024;
                u++;
        }
        snprintf(buf, size, "%" PRIu64 "%c", v, units[u]);
        return buf;
}

/* A job's GPUs as Slurm's tres_per_node string: "gres/gpu:2", "gres/gpu:a100:2", or its
 * shards, "gres/shard:2"; on one node a job's GPUs are its node's. */
static const char *format_tres_per_node(const JobInfo *j, char *buf, size_t size) {
        if (j->shards > 0) {
                snprintf(buf, size, "gres/shard:%s%s%u", strempty(j->gpu_type), j->gpu_type ? ":" : "", j->shards);
                return buf;
        }
        if (j->gpus == 0)
                return NULL;
        snprintf(buf, size, "gres/gpu:%s%s%u", strempty(j->gpu_type), j->gpu_type ? ":" : "", j->gpus);
        return buf;
}

/* Slurm's TRES strings: scontrol writes them in TRES id order (cpu, mem, node, billing,
 * gres), sacct sorted by name. billing: the CPUs, Slurm's default TRESBillingWeights. */
static const char *format_tres(const JobInfo *j, bool sacct_order, char *buf, size_t size) {
        char mem[32] = "", gpus[32] = "", mb[24];

        if (j->memory > 0)
                snprintf(mem, sizeof mem, "mem=%s,", format_megabytes(mb, sizeof mb, j->memory));
        if (j->gpus > 0)
                snprintf(gpus, sizeof gpus, sacct_order ? "gres/gpu=%u," : ",gres/gpu=%u", j->gpus);
        else if (j->shards > 0)
                snprintf(gpus, sizeof gpus, sacct_order ? "gres/shard=%u," : ",gres/shard=%u", j->shards);
        if (sacct_order)
                snprintf(buf, size, "billing=%u,cpu=%u,%s%snode=1", j->cpus, j->cpus, gpus, mem);
        else
                snprintf(buf, size, "cpu=%u,%snode=1,billing=%u%s", j->cpus, mem, j->cpus, gpus);
        return buf;
}

static const char *squeue_value(char letter, const SqueueJob *sj, time_t now, char *buf, size_t size) {
        const JobInfo *j = sj->info;
        bool active = queue_section_of_state(j->state) == QUEUE_SECTION_ACTIVE;
        uint64_t elapsed = job_elapsed(j, now);

        switch (letter) {
        case 'i':
                if (j->array_job_id > 0)
                        snprintf(buf, size, "%" PRIu64 "_%" PRIu32, j->array_job_id, j->array_task_id);
                else
                        snprintf(buf, size, "%" PRIu64, j->id);
                return buf;
        case 'A':
                snprintf(buf, size, "%" PRIu64, j->id);
                return buf;
        case 'F':
                snprintf(buf, size, "%" PRIu64, j->array_job_id > 0 ? j->array_job_id : j->id);
                return buf;
        case 'K':
                if (j->array_job_id == 0)
                        return "N/A";
                snprintf(buf, size, "%" PRIu32, j->array_task_id);
                return buf;
        case 'j':
                return strempty(j->name);
        case 'u':
                return strempty(j->user);
        case 'U':
                snprintf(buf, size, "%u", (unsigned) j->uid);
                return buf;
        case 'a':
                return strempty(j->project);
        case 'P':
                return strempty(j->queue);
        case 't':
                return slurm_state_compact(j->state);
        case 'T':
                return slurm_state_name(j->state);
        case 'M':
                return slurm_format_secs(buf, size, elapsed);
        case 'l':
                if (walltime_is_unlimited(j->walltime_sec))
                        return "UNLIMITED";
                return slurm_format_secs(buf, size, j->walltime_sec);
        case 'L':
                if (walltime_is_unlimited(j->walltime_sec))
                        return "UNLIMITED";
                return slurm_format_secs(buf, size, j->walltime_sec > elapsed ? j->walltime_sec - elapsed : 0);
        case 'D':
                return "1";
        case 'C':
        case 'c':
                snprintf(buf, size, "%u", j->cpus);
                return buf;
        case 'm':
                if (j->memory == 0)
                        return "0";
                if (sj->noconvert) { /* --noconvert: megabytes as they are, "2048M" */
                        snprintf(buf, size, "%" PRIu64 "M", j->memory >> 20);
                        return buf;
                }
                return format_megabytes(buf, size, j->memory);
        case 'R':
                if (active)
                        return strempty(j->node);
                snprintf(buf, size, "(%s)", isempty(j->reason) ? "None" : j->reason);
                return buf;
        case 'N':
                return active ? strempty(j->node) : "";
        case 'r':
                return isempty(j->reason) ? "None" : j->reason;
        case 'S':
                if (j->start_time == 0)
                        return "N/A";
                return slurm_format_time(buf, size, j->start_time);
        case 'V':
                return slurm_format_time(buf, size, j->submit_time);
        case 'e':
                if (j->end_time > 0)
                        return slurm_format_time(buf, size, j->end_time);
                if (j->start_time > 0 && !walltime_is_unlimited(j->walltime_sec))
                        return slurm_format_time(buf, size, j->start_time + j->walltime_sec);
                return "N/A";
        case 'Q':
                snprintf(buf, size, "%" PRIi64, sj->has_priority ? (int64_t) (sj->priority + 0.5) : INT64_C(0));
                return buf;
        case 'y':
                snprintf(buf, size, "%d", j->nice);
                return buf;
        case 'q':
                return "normal";
        case 'b':
                return format_tres_per_node(j, buf, size) ?: "N/A";
        case 'B':
                return active && j->node ? j->node : "n/a";
        case 'd':
                return "0";
        case 'E':
        case 'w':
        case 'W':
        case 'v':
        case 'Y':
                return "(null)"; /* no dependency once it is met, WCKey, license, reservation */
        case 'f':
                return j->constraint ?: "(null)";
        case 'g':
                return sj->group ?: "(null)";
        case 'G':
                snprintf(buf, size, "%u", (unsigned) sj->gid);
                return buf;
        case 'h':
                return "OK";
        case 'H':
        case 'I':
        case 'J':
                return "*";
        case 'z':
                return "*:*:*";
        case 'k':
                return j->comment ?: "(null)";
        case 'n':
        case 'x':
                return "";
        case 'o':
                /* The script's path is not kept: a script is "(null)", as Slurm has it
                 * for one read from standard input. */
                return j->has_details && !j->has_script && j->argv && j->argv[0] ? j->argv[0] : "(null)";
        case 'O':
                return "0";
        case 'X':
                return "N/A";
        case 'Z':
                return j->workdir ?: "(null)";
        case '1':
                return format_tres(j, false, buf, size);
        }
        return NULL;
}

int squeue_print(FILE *out, const SlurmFormat *f, const SqueueJob *jobs, size_t n, bool header, time_t now) {
        char buf[256];

        if (squeue_format_check(f, NULL) < 0)
                return -EINVAL;
        if (header) {
                for (size_t i = 0; i < f->n; i++) {
                        const SlurmFormatItem *it = &f->items[i];
                        if (it->text)
                                fputs(it->text, out);
                        else
                                slurm_print_field(out, it, squeue_fields[squeue_field_index(it)].header);
                }
                fputc('\n', out);
        }
        for (size_t k = 0; k < n; k++) {
                for (size_t i = 0; i < f->n; i++) {
                        const SlurmFormatItem *it = &f->items[i];
                        if (it->text)
                                fputs(it->text, out);
                        else
                                slurm_print_field(out, it,
                                                  squeue_value(squeue_fields[squeue_field_index(it)].letter,
                                                               &jobs[k], now, buf, sizeof(buf)));
                }
                fputc('\n', out);
        }
        return ferror(out) ? -EIO : 0;
}

/* ---- sacct ---- */

static const struct {
        const char *name;
        int width; /* negative: left justified */
} sacct_fields[] = {
        { "JobID", -12 },     { "JobIDRaw", -12 },  { "JobName", 10 },  { "User", 9 },       { "UID", 5 },
        { "Account", 10 },    { "Partition", 10 },  { "State", 10 },    { "ExitCode", 8 },   { "Elapsed", 10 },
        { "ElapsedRaw", 10 }, { "Submit", 19 },     { "Start", 19 },    { "End", 19 },       { "AllocCPUS", 10 },
        { "NCPUS", 10 },      { "ReqCPUS", 8 },     { "CPUTime", 10 },  { "CPUTimeRAW", 10 }, { "TotalCPU", 10 },
        { "MaxRSS", 10 },     { "ReqMem", 10 },     { "NodeList", 15 }, { "NNodes", 8 },     { "Timelimit", 10 },
        { "Reason", 20 },     { "Priority", 10 },   { "QOS", 10 },      { "WorkDir", 30 },
        { "AllocTRES", 10 },  { "ReqTRES", 10 },    { "Group", 9 },     { "Comment", 15 },
        { "TRESUsageInAve", 14 }, { "TRESUsageInMax", 14 }, { "ConsumedEnergy", 14 },
        { "ConsumedEnergyRaw", 17 },
};

static int sacct_field_index(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(sacct_fields); i++)
                if (strcaseeq(name, sacct_fields[i].name))
                        return (int) i;
        return -1;
}

int sacct_fields_check(const SlurmFormat *f, const char **ret_bad) {
        for (size_t i = 0; i < f->n; i++)
                if (!f->items[i].name || sacct_field_index(f->items[i].name) < 0) {
                        if (ret_bad)
                                *ret_bad = f->items[i].name ?: "";
                        return -EINVAL;
                }
        return 0;
}

static unsigned alloc_cpus(const JobInfo *j) {
        return j->start_time > 0 ? j->cpus : 0;
}

/* Slurm's convert_num_unit2() with a unit asked for (--units): the value in that unit,
 * whole or with two decimals; 0 is "0". from is the unit of v ('K', 'M'). */
static char *format_in_units(char *buf, size_t size, uint64_t v, char from, char to) {
        static const char order[] = "KMGTP";
        const char *a = strchr(order, from), *b = strchr(order, to);
        double x = (double) v;

        if (v == 0) {
                snprintf(buf, size, "0");
                return buf;
        }
        for (; a && b && a < b; a++)
                x /= 1024;
        for (; a && b && a > b; a--)
                x *= 1024;
        if ((double) (uint64_t) x == x)
                snprintf(buf, size, "%" PRIu64 "%c", (uint64_t) x, to);
        else
                snprintf(buf, size, "%.2f%c", x, to);
        return buf;
}

static const char *sacct_value(const SlurmFormat *f, const char *name, const JobInfo *j, time_t now, char *buf,
                               size_t size);

const char *sacct_field_value(const char *name, const JobInfo *j, time_t now, char *buf, size_t size) {
        return sacct_value(&(SlurmFormat) {}, name, j, now, buf, size);
}

static const char *sacct_value(const SlurmFormat *f, const char *name, const JobInfo *j, time_t now, char *buf,
                               size_t size) {
        uint64_t elapsed = job_elapsed(j, now);

        if (strcaseeq(name, "JobID")) {
                if (j->array_job_id > 0)
                        snprintf(buf, size, "%" PRIu64 "_%" PRIu32, j->array_job_id, j->array_task_id);
                else
                        snprintf(buf, size, "%" PRIu64, j->id);
        } else if (strcaseeq(name, "JobIDRaw"))
                snprintf(buf, size, "%" PRIu64, j->id);
        else if (strcaseeq(name, "JobName"))
                return strempty(j->name);
        else if (strcaseeq(name, "User"))
                return strempty(j->user);
        else if (strcaseeq(name, "UID"))
                snprintf(buf, size, "%u", (unsigned) j->uid);
        else if (strcaseeq(name, "Account"))
                return strempty(j->project);
        else if (strcaseeq(name, "Partition"))
                return strempty(j->queue);
        else if (strcaseeq(name, "State"))
                return slurm_state_name(j->state);
        else if (strcaseeq(name, "ExitCode"))
                snprintf(buf, size, "%d:%d", j->exit_code >= 0 ? j->exit_code : 0, j->exit_signal);
        else if (strcaseeq(name, "Elapsed"))
                return slurm_format_elapsed(buf, size, elapsed);
        else if (strcaseeq(name, "ElapsedRaw"))
                snprintf(buf, size, "%" PRIu64, elapsed);
        else if (strcaseeq(name, "Submit"))
                return slurm_format_time(buf, size, j->submit_time);
        else if (strcaseeq(name, "Start"))
                return slurm_format_time(buf, size, j->start_time);
        else if (strcaseeq(name, "End"))
                return slurm_format_time(buf, size, j->end_time);
        else if (strcaseeq(name, "AllocCPUS") || strcaseeq(name, "NCPUS"))
                snprintf(buf, size, "%u", alloc_cpus(j));
        else if (strcaseeq(name, "ReqCPUS"))
                snprintf(buf, size, "%u", j->cpus);
        else if (strcaseeq(name, "CPUTime"))
                return slurm_format_elapsed(buf, size, elapsed * alloc_cpus(j));
        else if (strcaseeq(name, "CPUTimeRAW"))
                snprintf(buf, size, "%" PRIu64, elapsed * alloc_cpus(j));
        else if (strcaseeq(name, "TotalCPU"))
                return slurm_format_cpu_usec(buf, size, j->usage.cpu_usec);
        else if (strcaseeq(name, "MaxRSS")) {
                /* Slurm has it on the steps; there are none here, so on the job's line. */
                if (j->usage.memory_peak == 0)
                        return "";
                if (f->units)
                        return format_in_units(buf, size, j->usage.memory_peak >> 10, 'K', f->units);
                snprintf(buf, size, "%" PRIu64 "K", j->usage.memory_peak >> 10);
        } else if (strcaseeq(name, "ReqMem")) {
                if (j->memory == 0)
                        return "0";
                if (f->units)
                        return format_in_units(buf, size, j->memory >> 20, 'M', f->units);
                return format_megabytes(buf, size, j->memory);
        } else if (strcaseeq(name, "NodeList"))
                return j->start_time > 0 && !isempty(j->node) ? j->node : "None assigned";
        else if (strcaseeq(name, "NNodes"))
                return "1";
        else if (strcaseeq(name, "Timelimit")) {
                if (walltime_is_unlimited(j->walltime_sec))
                        return "UNLIMITED";
                return slurm_format_elapsed(buf, size, j->walltime_sec);
        } else if (strcaseeq(name, "Reason"))
                return isempty(j->reason) ? "None" : j->reason;
        else if (strcaseeq(name, "Priority"))
                snprintf(buf, size, "%" PRIi64, j->has_priority ? (int64_t) (j->priority + 0.5) : INT64_C(0));
        else if (strcaseeq(name, "QOS"))
                return "normal";
        else if (strcaseeq(name, "WorkDir"))
                return strempty(j->workdir);
        else if (strcaseeq(name, "ReqTRES"))
                return format_tres(j, true, buf, size);
        else if (strcaseeq(name, "TRESUsageInAve") || strcaseeq(name, "TRESUsageInMax")) {
                /* On the job's line, as MaxRSS (no steps here): cpu, Slurm's gres/gpumem and
                 * gres/gpuutil (the GPUs summed, from NVML), mem; sorted by name. The
                 * average has no GPU memory: only its peak is kept. */
                bool max = strcaseeq(name, "TRESUsageInMax");
                const JobGpuTotals *g = &j->gpu_totals;
                char cpu[32], mem[32] = "", gpu[64] = "";

                if (!j->has_details)
                        return "";
                slurm_format_elapsed(cpu, sizeof cpu, j->usage.cpu_usec / 1000000);
                if (j->usage.memory_peak > 0)
                        snprintf(mem, sizeof mem, ",mem=%" PRIu64 "K", j->usage.memory_peak >> 10);
                if (g->n > 0 && max)
                        snprintf(gpu, sizeof gpu, ",gres/gpumem=%" PRIu64 "M,gres/gpuutil=%u", g->memory_max >> 20,
                                 g->util_max);
                else if (g->n > 0)
                        snprintf(gpu, sizeof gpu, ",gres/gpuutil=%.0f", g->util_mean);
                snprintf(buf, size, "cpu=%s%s%s", cpu, gpu, mem);
        } else if (strcaseeq(name, "ConsumedEnergyRaw")) {
                if (!j->gpu_totals.has_energy)
                        return "0";
                snprintf(buf, size, "%.0f", j->gpu_totals.energy_j);
        } else if (strcaseeq(name, "ConsumedEnergy")) {
                /* Slurm's: its GPUs' energy here, in units of 1000, converted as far as
                 * they go ("4K", "4.50K"). */
                static const char unit[] = "\0KMGTP";
                double e = j->gpu_totals.has_energy ? j->gpu_totals.energy_j : 0;
                size_t u = 0;

                if ((uint64_t) e == 0)
                        return "0";
                while (e >= 1000 && u + 2 < sizeof unit) {
                        e /= 1000;
                        u++;
                }
                if ((double) (uint64_t) e == e)
                        snprintf(buf, size, "%" PRIu64 "%.1s", (uint64_t) e, unit + u);
                else
                        snprintf(buf, size, "%.2f%.1s", e, unit + u);
        } else if (strcaseeq(name, "Group"))
                return f->group_of ? strempty(f->group_of(j->uid)) : "";
        else if (strcaseeq(name, "Comment"))
                return strempty(j->comment);
        else if (strcaseeq(name, "AllocTRES")) {
                /* Nothing is allocated to a job that never started, as sacct shows it. */
                if (j->start_time == 0)
                        return "";
                return format_tres(j, true, buf, size);
        } else
                return NULL;
        return buf;
}

static int item_width(const SlurmFormatItem *it, bool *ret_right) {
        int k = sacct_field_index(it->name ?: "");
        int w = it->width != 0 ? it->width : (k >= 0 ? sacct_fields[k].width : 10);

        if (it->width != 0)
                *ret_right = it->right;
        else
                *ret_right = w > 0;
        return w < 0 ? -w : w;
}

static const char *canonical_name(const SlurmFormatItem *it) {
        int k = sacct_field_index(it->name ?: "");
        return k >= 0 ? sacct_fields[k].name : it->name;
}

/* One value as sacct prints a column: cut to the width with a '+' for what is missing,
 * then one space. */
static void print_fixed(FILE *out, const char *v, int width, bool right) {
        if ((int) strlen(v) > width)
                fprintf(out, "%.*s+ ", width - 1, v);
        else if (right)
                fprintf(out, "%*s ", width, v);
        else
                fprintf(out, "%-*s ", width, v);
}

int slurm_fields_print(FILE *out, const SlurmFormat *f, const char *const *values, size_t n_rows,
                       SacctStyle style, bool header) {
        for (size_t row = 0; row < n_rows + (header ? 1 : 0); row++) {
                bool is_header = header && row == 0;
                size_t r = header ? row - 1 : row;

                for (size_t i = 0; i < f->n; i++) {
                        const char *v = is_header ? canonical_name(&f->items[i]) : values[r * f->n + i];
                        bool right;
                        int w = item_width(&f->items[i], &right);

                        _cleanup_free_ char *e = NULL;

                        v = v ?: "";
                        if (!text_is_safe(v)) {
                                e = text_escape(v);
                                v = e ?: "?";
                        }
                        if (style == SACCT_FIXED) {
                                if (is_header)
                                        fprintf(out, right ? "%*.*s " : "%-*.*s ", w, w, v);
                                else
                                        print_fixed(out, v, w, right);
                        } else {
                                fputs(v, out);
                                if (style == SACCT_PARSABLE || i + 1 < f->n)
                                        fputs(f->delimiter ?: "|", out);
                        }
                }
                fputc('\n', out);
                if (is_header && style == SACCT_FIXED) {
                        for (size_t i = 0; i < f->n; i++) {
                                bool right;
                                int w = item_width(&f->items[i], &right);
                                for (int k = 0; k < w; k++)
                                        fputc('-', out);
                                fputc(' ', out);
                        }
                        fputc('\n', out);
                }
        }
        return ferror(out) ? -EIO : 0;
}

int sacct_print(FILE *out, const SlurmFormat *f, const JobInfo *const *jobs, size_t n, SacctStyle style,
                bool header, time_t now) {
        _cleanup_free_ char *bufs = NULL;
        _cleanup_free_ const char **values = NULL;
        const size_t bsize = 256;
        int r;

        if (sacct_fields_check(f, NULL) < 0)
                return -EINVAL;
        if (n > 0 && f->n > SIZE_MAX / n / bsize)
                return -ENOMEM;
        values = new0(const char *, n * f->n + 1);
        bufs = new0(char, n * f->n * bsize + 1);
        if (!values || !bufs)
                return -ENOMEM;
        for (size_t k = 0; k < n; k++)
                for (size_t i = 0; i < f->n; i++) {
                        char *b = bufs + (k * f->n + i) * bsize;
                        values[k * f->n + i] = sacct_value(f, f->items[i].name, jobs[k], now, b, bsize);
                }
        r = slurm_fields_print(out, f, values, n, style, header);
        return r;
}

/* ---- sinfo ---- */

/* -O's GresUsed has no letter of -o: a character slurm_format_parse() never takes. */
#define SINFO_GRES_USED '#'

static const struct {
        char letter;
        const char *header;
        const char *long_name; /* -O; NULL: none */
        bool per_partition;    /* differs between partitions: one line each (else one line) */
} sinfo_fields[] = {
        { 'P', "PARTITION", "Partition", true },
        { 'R', "PARTITION", "PartitionName", true },
        { 'a', "AVAIL", "Available", true },
        { 'l', "TIMELIMIT", "Time", true },
        { 'D', "NODES", "Nodes" },
        { 't', "STATE", "StateCompact" },
        { 'T', "STATE", "StateLong" },
        { 'N', "NODELIST", "NodeList" },
        { 'n', "HOSTNAMES", "NodeHost" },
        { 'c', "CPUS", "CPUs" },
        { 'm', "MEMORY", "Memory" },
        { 'C', "CPUS(A/I/O/T)", "CPUsState" },
        { 'F', "NODES(A/I/O/T)", "NodeAIOT" },
        { 'f', "AVAIL_FEATURES", "Features" },
        { 'G', "GRES", "Gres" },
        { SINFO_GRES_USED, "GRES_USED", "GresUsed" },
        { 'E', "REASON", "Reason" },
        { 'u', "USER", "User" },
        { 'H', "TIMESTAMP", "Timestamp" },
};

static int sinfo_field_index(char c) {
        for (size_t i = 0; i < ELEMENTSOF(sinfo_fields); i++)
                if (sinfo_fields[i].letter == c)
                        return (int) i;
        return -1;
}

int sinfo_format_parse_long(const char *s, SlurmFormat *ret, const char **ret_bad) {
        _cleanup_(slurm_format_done) SlurmFormat f = {};
        int r;

        r = slurm_format_parse_long(s, &f);
        if (r < 0)
                return r;
        for (size_t i = 0; i < f.n; i++) {
                SlurmFormatItem *it = &f.items[i];

                if (it->text) /* a field's suffix ("NodeHost:20|") */
                        continue;
                for (size_t k = 0; k < ELEMENTSOF(sinfo_fields) && !it->field; k++)
                        if (sinfo_fields[k].long_name && strcaseeq(sinfo_fields[k].long_name, it->name))
                                it->field = sinfo_fields[k].letter;
                if (!it->field) {
                        if (ret_bad)
                                *ret_bad = it->name;
                        *ret = f;
                        f = (SlurmFormat) {};
                        return -EINVAL;
                }
        }
        *ret = f;
        f = (SlurmFormat) {};
        return 0;
}

int sinfo_format_check(const SlurmFormat *f, const char **ret_bad) {
        static char letter[2];

        for (size_t i = 0; i < f->n; i++)
                if (!f->items[i].text && sinfo_field_index(f->items[i].field) < 0) {
                        if (ret_bad) {
                                letter[0] = f->items[i].field;
                                *ret_bad = letter;
                        }
                        return -EINVAL;
                }
        return 0;
}

static const char *sinfo_value(char c, const SinfoPartition *p, char *buf, size_t size) {
        bool idle = p->cpus_allocated == 0, full = p->cpus_allocated >= p->cpus;

        switch (c) {
        case 'P':
                snprintf(buf, size, "%s%s", p->name, p->is_default ? "*" : "");
                return buf;
        case 'R':
                return p->name;
        case 'a':
                return "up";
        case 'l':
                if (p->max_walltime == 0)
                        return "infinite";
                return slurm_format_secs(buf, size, p->max_walltime);
        case 'D':
                return "1";
        case 't':
                return idle ? "idle" : full ? "alloc" : "mix";
        case 'T':
                return idle ? "idle" : full ? "allocated" : "mixed";
        case 'N':
        case 'n':
                return p->node;
        case 'c':
                snprintf(buf, size, "%u", p->cpus);
                return buf;
        case 'm':
                snprintf(buf, size, "%" PRIu64, p->memory >> 20);
                return buf;
        case 'C':
                snprintf(buf, size, "%u/%u/0/%u", MIN(p->cpus_allocated, p->cpus),
                         p->cpus - MIN(p->cpus_allocated, p->cpus), p->cpus);
                return buf;
        case 'F':
                /* Slurm counts a mixed node as allocated. */
                return idle ? "0/1/0/1" : "1/0/0/1";
        case 'f':
                return "(null)";
        case 'G':
                return isempty(p->gres) ? "(null)" : p->gres;
        case SINFO_GRES_USED:
                return isempty(p->gres_used) ? "(null)" : p->gres_used;
        case 'E':
                return p->reason ?: "none";
        case 'u':
                return p->reason_user ?: "Unknown";
        case 'H':
                return p->reason && p->reason_time ? slurm_format_time(buf, size, p->reason_time) : "Unknown";
        }
        return "";
}

/* A device's GRES type as Slurm's NVML autodetection names it: the model's type name, a
 * MIG device's profile ("1g.10gb"); NULL for a GPU in MIG mode, which Slurm counts as its
 * MIG devices only, and for one gone. */
static const char *gres_type(const DeviceInfo *d, char *buf, size_t size) {
        if (d->mig_mode || d->offline)
                return NULL; /* and a card gone: none of the node's */
        if (d->mig_of || d->mig_profile) {
                snprintf(buf, size, "%s", d->mig_profile ?: "mig");
                return buf;
        }
        return device_model_type_name(d->model, buf, size);
}

static bool same_type(const DeviceInfo *d, const char *type) {
        char other[256];
        const char *t = gres_type(d, other, sizeof other);

        return t && type && streq(t, type);
}

/* Whether devices[i] is the first of its model's type name (in *type, sizeof type >= 256):
 * sinfo's GRES strings name each type once, in the order they come. */
static bool first_of_type(const DeviceInfo *devices, size_t i, char *type, size_t size) {
        if (!gres_type(&devices[i], type, size))
                return false;
        for (size_t p = 0; p < i; p++)
                if (same_type(&devices[p], type))
                        return false;
        return true;
}

/* ",shard:M" after the GPUs: the shards of the machine's shared GPUs (Slurm's gres/shard,
 * untyped), or with used, those in use. */
static void sinfo_append_shards(const DeviceInfo *devices, size_t n, bool used, char *buf, size_t size, size_t k) {
        uint64_t total = 0;
        bool shared = false;
        int w;

        for (size_t i = 0; i < n; i++)
                if (!devices[i].offline && devices[i].shards > 0) {
                        shared = true;
                        total += used ? devices[i].shards_used : devices[i].shards;
                }
        if (!shared)
                return;
        w = snprintf(buf + k, size - k, "%sshard:%" PRIu64, k > 0 ? "," : "", total);
        if (w < 0 || (size_t) w >= size - k)
                buf[k] = '\0';
}

char *sinfo_format_gres(const DeviceInfo *devices, size_t n, char *buf, size_t size) {
        size_t k = 0;

        assert(size > 0);
        buf[0] = '\0';
        for (size_t i = 0; i < n; i++) {
                char type[256];
                unsigned count = 0;
                int w;

                if (!first_of_type(devices, i, type, sizeof type))
                        continue;
                for (size_t p = i; p < n; p++)
                        count += same_type(&devices[p], type);
                w = snprintf(buf + k, size - k, "%sgpu:%s%s%u", k > 0 ? "," : "", type, type[0] ? ":" : "", count);
                if (w < 0 || (size_t) w >= size - k) {
                        buf[k] = '\0';
                        break;
                }
                k += (size_t) w;
        }
        sinfo_append_shards(devices, n, false, buf, size, k);
        return buf;
}

/* "0,2-3" of the indices of the devices of type whose job_id is set. */
static void gres_used_indices(const DeviceInfo *devices, size_t n, const char *type, char *buf, size_t size) {
        size_t k = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < n; i++) {

                uint32_t last;
                size_t j;
                int w;

                if (!devices[i].job_id || !same_type(&devices[i], type) ||
                    (i > 0 && devices[i - 1].job_id && devices[i - 1].index + 1 == devices[i].index &&
                     same_type(&devices[i - 1], type)))
                        continue;
                /* A run of consecutive held indices of this type. */
                for (j = i + 1; j < n && devices[j].job_id && devices[j].index == devices[j - 1].index + 1 &&
                                same_type(&devices[j], type);
                     j++)
                        ;
                last = devices[j - 1].index;
                if (last == devices[i].index)
                        w = snprintf(buf + k, size - k, "%s%" PRIu32, k > 0 ? "," : "", devices[i].index);
                else
                        w = snprintf(buf + k, size - k, "%s%" PRIu32 "-%" PRIu32, k > 0 ? "," : "",
                                     devices[i].index, last);
                if (w < 0 || (size_t) w >= size - k) {
                        buf[k] = '\0';
                        return;
                }
                k += (size_t) w;
        }
        if (k == 0)
                snprintf(buf, size, "N/A");
}

char *sinfo_format_gres_used(const DeviceInfo *devices, size_t n, char *buf, size_t size) {
        size_t k = 0;

        assert(size > 0);
        buf[0] = '\0';
        for (size_t i = 0; i < n; i++) {
                char type[256], idx[256];
                unsigned used = 0;
                int w;

                if (!first_of_type(devices, i, type, sizeof type))
                        continue;
                for (size_t p = i; p < n; p++)
                        used += devices[p].job_id != 0 && same_type(&devices[p], type);
                gres_used_indices(devices, n, type, idx, sizeof idx);
                w = snprintf(buf + k, size - k, "%sgpu:%s%s%u(IDX:%s)", k > 0 ? "," : "", type, type[0] ? ":" : "",
                             used, idx);
                if (w < 0 || (size_t) w >= size - k) {
                        buf[k] = '\0';
                        break;
                }
                k += (size_t) w;
        }
        sinfo_append_shards(devices, n, true, buf, size, strlen(buf));
        return buf;
}

int sinfo_print(FILE *out, const SlurmFormat *f, const SinfoPartition *parts, size_t n, bool header) {
        bool per_partition = false;
        char buf[256];

        if (sinfo_format_check(f, NULL) < 0)
                return -EINVAL;
        /* Slurm merges the lines that print the same: without a field that differs between
         * partitions, this one node's partitions are one line. */
        for (size_t i = 0; i < f->n; i++)
                per_partition = per_partition ||
                                (!f->items[i].text && sinfo_fields[sinfo_field_index(f->items[i].field)].per_partition);
        if (!per_partition)
                n = MIN(n, (size_t) 1);
        for (size_t row = 0; row < n + (header ? 1 : 0); row++) {
                bool is_header = header && row == 0;
                const SinfoPartition *p = is_header ? NULL : &parts[header ? row - 1 : row];

                for (size_t i = 0; i < f->n; i++) {
                        const SlurmFormatItem *it = &f->items[i];
                        if (it->text)
                                fputs(it->text, out);
                        else
                                slurm_print_field(out, it,
                                                  is_header ? sinfo_fields[sinfo_field_index(it->field)].header
                                                            : sinfo_value(it->field, p, buf, sizeof(buf)));
                }
                fputc('\n', out);
        }
        return ferror(out) ? -EIO : 0;
}

/* ---- scontrol show job ---- */

/* One line of scontrol's output: its values are the users' (names, paths, the command),
 * escaped whatever corrald stored. */
static void show_line(FILE *out, const char *fmt, ...) _printf_(2, 3);
static void show_line(FILE *out, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        (void) vfprintf_escaped(out, fmt, ap);
        va_end(ap);
        fputc('\n', out);
}

/* A record as scontrol prints it: as written (continuation lines indented by three
 * spaces, a blank line after it), or, with -o, each line break a space and the record
 * one line. */
static int show_record_emit(FILE *out, FILE *mem, char **buf, bool oneliner) {
        size_t l;

        if (fclose(mem) != 0 || !*buf)
                return -ENOMEM;
        if (!oneliner) {
                fputs(*buf, out);
                return ferror(out) ? -EIO : 0;
        }
        l = strlen(*buf);
        while (l > 0 && (*buf)[l - 1] == '\n')
                l--;
        for (size_t i = 0; i < l; i++) {
                if ((*buf)[i] != '\n') {
                        fputc((*buf)[i], out);
                        continue;
                }
                fputc(' ', out);
                while (i + 1 < l && (*buf)[i + 1] == ' ')
                        i++;
        }
        fputc('\n', out);
        return ferror(out) ? -EIO : 0;
}

int scontrol_show_job(FILE *out_final, const JobInfo *j, time_t now, bool oneliner) {
        _cleanup_free_ char *buf = NULL;
        size_t buf_size;
        FILE *out = open_memstream(&buf, &buf_size);
        char a[64], b[64], c[64], d[64];
        bool started = j->start_time > 0;

        if (!out)
                return -ENOMEM;

        show_line(out, "JobId=%" PRIu64 " JobName=%s", j->id, strempty(j->name));
        if (j->array_job_id > 0)
                show_line(out, "   ArrayJobId=%" PRIu64 " ArrayTaskId=%" PRIu32, j->array_job_id,
                          j->array_task_id);
        show_line(out, "   UserId=%s(%u) Account=%s QOS=normal", strempty(j->user), (unsigned) j->uid,
                  strempty(j->project));
        show_line(out, "   Priority=%" PRIi64 " Nice=%d",
                  j->has_priority ? (int64_t) (j->priority + 0.5) : INT64_C(0), j->nice);
        show_line(out, "   JobState=%s Reason=%s", slurm_state_name(j->state),
                  isempty(j->reason) ? "None" : j->reason);
        show_line(out, "   ExitCode=%d:%d", j->exit_code >= 0 ? j->exit_code : 0, j->exit_signal);
        show_line(out, "   RunTime=%s TimeLimit=%s", slurm_format_elapsed(a, sizeof(a), job_elapsed(j, now)),
                  walltime_is_unlimited(j->walltime_sec)
                          ? "UNLIMITED"
                          : slurm_format_elapsed(b, sizeof(b), j->walltime_sec));
        show_line(out, "   SubmitTime=%s StartTime=%s EndTime=%s",
                  slurm_format_time(a, sizeof(a), j->submit_time),
                  slurm_format_time(c, sizeof(c), j->start_time),
                  slurm_format_time(d, sizeof(d), j->end_time));
        show_line(out, "   Partition=%s", strempty(j->queue));
        show_line(out, "   NodeList=%s", started && !isempty(j->node) ? j->node : "(null)");
        if (started && !isempty(j->node))
                show_line(out, "   BatchHost=%s", j->node);
        show_line(out, "   NumNodes=1 NumCPUs=%u NumTasks=1 CPUs/Task=%u", j->cpus, j->cpus);
        if (!isempty(j->cpus_allocated))
                show_line(out, "   CPU_IDs=%s", j->cpus_allocated);
        show_line(out, "   TRES=%s", format_tres(j, false, a, sizeof(a)));
        show_line(out, "   MinMemoryNode=%s",
                  j->memory > 0 ? format_megabytes(a, sizeof(a), j->memory) : "0");
        show_line(out, "   Features=%s", j->constraint ?: "(null)");
        show_line(out, "   TresPerNode=%s", format_tres_per_node(j, a, sizeof(a)) ?: "(null)");
        /* scontrol -d's per-node GRES with the GPUs' indexes. */
        if (!isempty(j->gpus_allocated) && j->shards > 0)
                show_line(out, "   GRES=shard:%u(IDX:%s)", j->shards, j->gpus_allocated);
        else if (!isempty(j->gpus_allocated))
                show_line(out, "   GRES=gpu:%s%s%u(IDX:%s)", strempty(j->gpu_type), j->gpu_type ? ":" : "", j->gpus,
                          j->gpus_allocated);
        if (j->has_details) {
                _cleanup_free_ char *cmd = j->argv ? argv_to_display(j->argv) : NULL;
                show_line(out, "   Command=%s", cmd ?: (j->has_script ? "(batch script)" : "(null)"));
                show_line(out, "   WorkDir=%s", j->workdir ?: "(null)");
                show_line(out, "   StdErr=%s", j->stderr_path ?: "(null)");
                show_line(out, "   StdIn=%s", j->stdin_path ?: "/dev/null");
                show_line(out, "   StdOut=%s", j->stdout_path ?: "(null)");
        }
        fputc('\n', out);
        return show_record_emit(out_final, out, &buf, oneliner);
}

static void config_line(FILE *out, const char *key, const char *fmt, ...) _printf_(3, 4);
static void config_line(FILE *out, const char *key, const char *fmt, ...) {
        va_list ap;

        fprintf(out, "%-23s = ", key);
        va_start(ap, fmt);
        (void) vfprintf_escaped(out, fmt, ap);
        va_end(ap);
        fputc('\n', out);
}

int scontrol_show_config(FILE *out, const ShowConfig *c, time_t now) {
        char t[64];
        const char *host = strempty(c->hostname);

        fprintf(out, "Configuration data as of %s\n", slurm_format_time(t, sizeof t, (uint64_t) now));
        /* Slurm's order (alphabetical, as its list). Where Corral has no equivalent, the
         * value Slurm prints for its own default, so that a client's expectations hold. */
        /* Corral keeps every job's accounting and sacct reads it: a client that checks for
         * a database before calling sacct must find one. */
        config_line(out, "AccountingStorageType", "accounting_storage/slurmdbd");
        /* Corral samples no node energy. */
        config_line(out, "AcctGatherNodeFreq", "0 sec");
        config_line(out, "ClusterName", "%s", host);
        /* Slurm's default: Corral reads a job's usage from its cgroup when it ends. */
        config_line(out, "JobAcctGatherFrequency", "30");
        config_line(out, "JobAcctGatherType", "jobacct_gather/cgroup");
        config_line(out, "MaxArraySize", "%" PRIu32, c->max_array_size);
        /* Slurm's default: corrald bounds jobs per user (MaxJobsPerUser=), not in all. */
        config_line(out, "MaxJobCount", "10000");
        config_line(out, "MinJobAge", "%" PRIu64 " sec", c->min_job_age_sec);
        config_line(out, "SLURM_VERSION", SLURM_EMULATED_VERSION);
        config_line(out, "SchedulerParameters", "sched_interval=%" PRIu64, c->sched_interval_sec);
        /* Slurm's gang scheduling slice; corrald's suspensions are not time-sliced, its
         * periodic pass is the closest (what clients derive a polling interval from). */
        config_line(out, "SchedulerTimeSlice", "%" PRIu64 " sec", c->sched_interval_sec);
        config_line(out, "SchedulerType", "%s",
                    streq_ptr(c->policy, "fcfs") ? "sched/builtin" : "sched/backfill");
        /* Corral gives each job whole logical CPUs and a memory limit. */
        config_line(out, "SelectType", "select/cons_tres");
        config_line(out, "SelectTypeParameters", "CR_CPU_MEMORY");
        config_line(out, "SlurmctldHost[0]", "%s", host);
        fprintf(out, "\nSlurmctld(primary) at ");
        (void) fprintf_escaped(out, "%s", host);
        fprintf(out, " is UP\n");
        return ferror(out) ? -EIO : 0;
}

int scontrol_show_partition(FILE *out_final, const SinfoPartition *p, bool oneliner) {
        _cleanup_free_ char *buf = NULL;
        size_t buf_size;
        FILE *out = open_memstream(&buf, &buf_size);
        char t[64], mem[64];

        if (!out)
                return -ENOMEM;
        show_line(out, "PartitionName=%s", strempty(p->name));
        show_line(out, "   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL");
        show_line(out, "   AllocNodes=ALL Default=%s QoS=N/A", p->is_default ? "YES" : "NO");
        show_line(out, "   DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO");
        show_line(out, "   MaxNodes=1 MaxTime=%s MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED",
                  p->max_walltime == 0 ? "UNLIMITED" : slurm_format_elapsed(t, sizeof t, p->max_walltime));
        show_line(out, "   Nodes=%s", strempty(p->node));
        show_line(out, "   PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO");
        show_line(out, "   OverTimeLimit=NONE PreemptMode=OFF");
        show_line(out, "   State=UP TotalCPUs=%u TotalNodes=1 SelectTypeParameters=NONE", p->cpus);
        show_line(out, "   JobDefaults=(null)");
        show_line(out, "   DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED");
        show_line(out, "   TRES=cpu=%u,mem=%s,node=1,billing=%u", p->cpus,
                  format_megabytes(mem, sizeof mem, p->memory), p->cpus);
        fputc('\n', out);
        return show_record_emit(out_final, out, &buf, oneliner);
}

int scontrol_show_node(FILE *out_final, const ShowNode *n, bool oneliner) {
        _cleanup_free_ char *buf = NULL;
        size_t buf_size;
        FILE *out = open_memstream(&buf, &buf_size);
        char mem[64];
        const char *state = n->cpus_allocated == 0 ? "IDLE"
                          : n->cpus_allocated >= n->cpus ? "ALLOCATED" : "MIXED";

        if (!out)
                return -ENOMEM;
        show_line(out, "NodeName=%s CoresPerSocket=1", strempty(n->name));
        show_line(out, "   CPUAlloc=%u CPUEfctv=%u CPUTot=%u", n->cpus_allocated, n->cpus, n->cpus);
        show_line(out, "   AvailableFeatures=(null)");
        show_line(out, "   ActiveFeatures=(null)");
        show_line(out, "   Gres=%s", isempty(n->gres) ? "(null)" : n->gres);
        show_line(out, "   NodeAddr=%s NodeHostName=%s Version=%s", strempty(n->name), strempty(n->name),
                  SLURM_EMULATED_VERSION);
        show_line(out, "   RealMemory=%" PRIu64 " AllocMem=0 FreeMem=N/A Sockets=%u Boards=1", n->memory >> 20,
                  n->cpus);
        show_line(out, "   State=%s ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A", state);
        show_line(out, "   Partitions=%s", strempty(n->partitions));
        show_line(out, "   CfgTRES=cpu=%u,mem=%s,billing=%u", n->cpus, format_megabytes(mem, sizeof mem, n->memory),
                  n->cpus);
        fputc('\n', out);
        return show_record_emit(out_final, out, &buf, oneliner);
}

/* ---- sacct times ---- */

/* Slurm's names for times of today (parse_time()). */
static const struct {
        const char *name;
        int hour;
} named_hours[] = {
        { "today", 0 }, { "midnight", 0 }, { "elevenses", 11 }, { "noon", 12 }, { "fika", 15 }, { "teatime", 16 },
};

/* One or two digits (max 2: exactly 2 when exact) at *p. */
static bool read_digits(const char **p, bool exact, unsigned *ret) {
        unsigned v = 0, n = 0;

        while (n < 2 && isdigit((unsigned char) (*p)[n])) {
                v = v * 10 + (unsigned) ((*p)[n] - '0');
                n++;
        }
        if (n == 0 || (exact && n != 2))
                return false;
        *p += n;
        *ret = v;
        return true;
}

/* HH:MM[:SS], with ampm also followed by AM or PM; the whole of s. */
static int parse_clock(const char *s, bool ampm, struct tm *tm) {
        unsigned h, m, sec = 0;

        if (!read_digits(&s, false, &h) || *s++ != ':' || !read_digits(&s, true, &m))
                return -EINVAL;
        if (*s == ':' && (s++, !read_digits(&s, true, &sec)))
                return -EINVAL;
        if (ampm && (strcaseeq(s, "AM") || strcaseeq(s, "PM"))) {
                if (h < 1 || h > 12)
                        return -EINVAL;
                h = h % 12 + (toupper((unsigned char) *s) == 'P' ? 12 : 0);
                s += 2;
        }
        if (*s || h > 23 || m > 59 || sec > 59)
                return -EINVAL;
        tm->tm_hour = (int) h;
        tm->tm_min = (int) m;
        tm->tm_sec = (int) sec;
        return 0;
}

/* MM/DD[/YY], MM.DD[.YY] or MMDD[YY], then [-HH:MM[:SS]]; midnight when no time. */
static int parse_month_day(const char *s, struct tm *tm) {
        unsigned mon, day, yy;
        char sep = 0;

        if (!read_digits(&s, true, &mon))
                return -EINVAL;
        if (*s == '/' || *s == '.')
                sep = *s++;
        if (!read_digits(&s, true, &day))
                return -EINVAL;
        if (*s && *s != '-') {
                if ((sep && *s++ != sep) || !read_digits(&s, true, &yy))
                        return -EINVAL;
                tm->tm_year = 100 + (int) yy;
        }
        if (mon < 1 || mon > 12 || day < 1 || day > 31)
                return -EINVAL;
        tm->tm_mon = (int) mon - 1;
        tm->tm_mday = (int) day;
        tm->tm_hour = tm->tm_min = tm->tm_sec = 0;
        if (*s == '-')
                return parse_clock(s + 1, false, tm);
        return *s ? -EINVAL : 0;
}

static int tm_to_time(struct tm *tm, uint64_t *ret) {
        int mon = tm->tm_mon, mday = tm->tm_mday;
        time_t t = mktime(tm);

        /* mktime() takes February 31 for March 3: not a date. */
        if (t == (time_t) -1 || t < 0 || tm->tm_mon != mon || tm->tm_mday != mday)
                return -EINVAL;
        *ret = (uint64_t) t;
        return 0;
}

int slurm_parse_time(const char *s, time_t now, uint64_t *ret) {
        struct tm tm;
        const char *end;

        if (!s || !*s)
                return -EINVAL;
        if (strcaseeq(s, "now")) {
                *ret = (uint64_t) now;
                return 0;
        }
        if (strncasecmp(s, "now-", 4) == 0 || strncasecmp(s, "now+", 4) == 0) {
                char *e;
                unsigned long long v;
                uint64_t mult = 1;

                errno = 0;
                v = strtoull(s + 4, &e, 10);
                if (errno != 0 || e == s + 4)
                        return -EINVAL;
                if (strcaseeq(e, "") || strcaseeq(e, "s") || strcaseeq(e, "seconds"))
                        mult = 1;
                else if (strcaseeq(e, "m") || strcaseeq(e, "minutes"))
                        mult = 60;
                else if (strcaseeq(e, "h") || strcaseeq(e, "hours"))
                        mult = 3600;
                else if (strcaseeq(e, "d") || strcaseeq(e, "days"))
                        mult = 86400;
                else if (strcaseeq(e, "w") || strcaseeq(e, "weeks"))
                        mult = 7 * 86400;
                else
                        return -EINVAL;
                if (v > (uint64_t) now / mult + 1000000)
                        return -EINVAL;
                if (s[3] == '-')
                        *ret = v * mult > (uint64_t) now ? 0 : (uint64_t) now - v * mult;
                else
                        *ret = (uint64_t) now + v * mult;
                return 0;
        }

        localtime_r(&now, &tm);
        tm.tm_isdst = -1;
        for (size_t i = 0; i < ELEMENTSOF(named_hours); i++)
                if (strcaseeq(s, named_hours[i].name)) {
                        tm.tm_hour = named_hours[i].hour;
                        tm.tm_min = tm.tm_sec = 0;
                        return tm_to_time(&tm, ret);
                }
        if ((end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)) && !*end)
                ;
        else if ((localtime_r(&now, &tm), tm.tm_isdst = -1, end = strptime(s, "%Y-%m-%dT%H:%M", &tm)) && !*end)
                tm.tm_sec = 0;
        else if ((localtime_r(&now, &tm), tm.tm_isdst = -1, end = strptime(s, "%Y-%m-%d", &tm)) && !*end)
                tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
        else if ((localtime_r(&now, &tm), tm.tm_isdst = -1, parse_clock(s, true, &tm) >= 0))
                ;
        else if ((localtime_r(&now, &tm), tm.tm_isdst = -1, parse_month_day(s, &tm) >= 0))
                ;
        else
                return -EINVAL;
        return tm_to_time(&tm, ret);
}
