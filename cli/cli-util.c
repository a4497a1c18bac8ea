/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli-util.h"
#include "parse-util.h"
#include "strv.h"

int job_ref_parse(const char *s, JobRef *ret) {
        _cleanup_free_ char *id = NULL;
        const char *u;
        uint64_t v;
        unsigned t = 0;

        assert(ret);

        if (isempty(s))
                return -EINVAL;
        u = strchr(s, '_');
        id = u ? strndup(s, (size_t) (u - s)) : strdup(s);
        if (!id)
                return -ENOMEM;
        /* safe_atou64 would take "+4" or " 4"; job ids are plain digits. */
        if (!isdigit((unsigned char) id[0]) || safe_atou64(id, &v) < 0 || v < 1 || v > CORRAL_JOB_ID_MAX)
                return -EINVAL;
        if (u && (!isdigit((unsigned char) u[1]) || safe_atou(u + 1, &t) < 0 || t > CORRAL_ARRAY_INDEX_MAX))
                return -EINVAL;
        *ret = (JobRef) { .id = v, .has_task = u, .task = t };
        return 0;
}

int signal_parse(const char *s, int *ret) {
        unsigned v;

        assert(ret);
        if (isempty(s))
                return -EINVAL;
        if (isdigit((unsigned char) s[0])) {
                if (safe_atou(s, &v) < 0 || v < 1 || v >= _NSIG)
                        return -EINVAL;
                *ret = (int) v;
                return 0;
        }
        if (strncasecmp(s, "SIG", 3) == 0)
                s += 3;
        /* The standard signals' names; real-time ones go by number. */
        for (int k = 1; k < SIGRTMIN; k++) {
                const char *a = sigabbrev_np(k);
                if (a && strcasecmp(a, s) == 0) {
                        *ret = k;
                        return 0;
                }
        }
        return -EINVAL;
}

static const struct {
        const char *name;
        const char *short_name;
        QueueSection section;
} states[] = {
        { "RUNNING", "R", QUEUE_SECTION_ACTIVE },
        { "SUSPENDED", "S", QUEUE_SECTION_ACTIVE },
        { "PENDING", "PD", QUEUE_SECTION_ELIGIBLE },
        { "HELD", "PD", QUEUE_SECTION_BLOCKED },
        { "BLOCKED", "PD", QUEUE_SECTION_BLOCKED },
        { "COMPLETED", "CD", QUEUE_SECTION_FINISHED },
        { "FAILED", "F", QUEUE_SECTION_FINISHED },
        { "CANCELLED", "CA", QUEUE_SECTION_FINISHED },
        { "TIMEOUT", "TO", QUEUE_SECTION_FINISHED },
        { "OUT_OF_MEMORY", "OOM", QUEUE_SECTION_FINISHED },
        { "NODE_FAIL", "NF", QUEUE_SECTION_FINISHED },
};

const char *const cli_job_states[] = {
        "PENDING", "HELD", "BLOCKED", "RUNNING", "SUSPENDED", "COMPLETED",
        "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", NULL,
};

QueueSection queue_section_of_state(const char *state) {
        for (size_t i = 0; state && i < ELEMENTSOF(states); i++)
                if (streq(states[i].name, state))
                        return states[i].section;
        return QUEUE_SECTION_BLOCKED;
}

const char *queue_section_name(QueueSection s) {
        static const char *const names[_QUEUE_SECTION_MAX] = {
                [QUEUE_SECTION_ACTIVE] = "active",
                [QUEUE_SECTION_ELIGIBLE] = "eligible",
                [QUEUE_SECTION_BLOCKED] = "blocked",
                [QUEUE_SECTION_FINISHED] = "finished",
        };
        return s >= 0 && s < _QUEUE_SECTION_MAX ? names[s] : NULL;
}

bool job_state_name_is_final(const char *state) {
        for (size_t i = 0; state && i < ELEMENTSOF(states); i++)
                if (streq(states[i].name, state))
                        return states[i].section == QUEUE_SECTION_FINISHED;
        return false;
}

static int states_add(char ***l, const char *name) {
        if (strv_contains(*l, name))
                return 0;
        return strv_extend(l, name);
}

int job_states_parse(const char *s, char ***ret, char **ret_bad) {
        _cleanup_strv_free_ char **items = NULL, **out = NULL;
        int r;

        assert(ret);

        r = strv_split(strempty(s), ",", &items);
        if (r < 0)
                return r;
        if (!items || !items[0]) {
                if (ret_bad)
                        *ret_bad = strdup("");
                return -EINVAL;
        }
        STRV_FOREACH(i, items) {
                bool found = false;

                if (strcaseeq(*i, "all")) {
                        for (size_t k = 0; k < ELEMENTSOF(states); k++)
                                if ((r = states_add(&out, states[k].name)) < 0)
                                        return r;
                        continue;
                }
                for (size_t k = 0; k < ELEMENTSOF(states); k++)
                        if (strcaseeq(*i, states[k].name) || strcaseeq(*i, states[k].short_name)) {
                                found = true;
                                if ((r = states_add(&out, states[k].name)) < 0)
                                        return r;
                        }
                if (!found) {
                        if (ret_bad)
                                *ret_bad = strdup(*i);
                        return -EINVAL;
                }
        }
        *ret = TAKE_PTR(out);
        return 0;
}

bool text_has_shebang(const char *text, size_t n) {
        return n >= 2 && text[0] == '#' && text[1] == '!';
}

bool text_is_script(const char *text, size_t n) {
        static const char *const prefixes[] = { "#SBATCH", "#PBS", "#CORRAL" };
        const char *p = text, *end = text + n;

        if (!text || memchr(text, 0, n))
                return false;
        if (text_has_shebang(text, n))
                return true;

        /* The same header rule as directives_parse(): directives count among the leading
         * blank and comment lines only. */
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p)), *e = nl ?: end, *q = p;

                while (q < e && isspace((unsigned char) *q))
                        q++;
                if (q < e && *q != '#')
                        return false;
                for (size_t i = 0; q == p && i < ELEMENTSOF(prefixes); i++) {
                        size_t l = strlen(prefixes[i]);
                        if ((size_t) (e - p) >= l && strneq(p, prefixes[i], l) &&
                            (p + l == e || isspace((unsigned char) p[l])))
                                return true;
                }
                p = nl ? nl + 1 : end;
        }
        return false;
}

int job_exit_status(const JobInfo *info) {
        assert(info);

        if (info->exit_signal > 0)
                return 128 + info->exit_signal;
        if (info->exit_code > 0)
                return info->exit_code;
        if (info->exit_code == 0 && streq_ptr(info->state, "COMPLETED"))
                return 0;
        /* Ended without a code of its own: cancelled while pending, lost with its node, or
         * a zero code in a state that is not success (a timeout the job survived). */
        return streq_ptr(info->state, "COMPLETED") ? 0 : 1;
}

char *format_job_outcome(char *buf, size_t size, const JobInfo *info) {
        const char *state = strna(info->state);

        if (info->exit_signal > 0) {
                const char *n = signal_to_string(info->exit_signal);
                if (n)
                        snprintf(buf, size, "%s, killed by signal %d (%s)", state, info->exit_signal, n);
                else
                        snprintf(buf, size, "%s, killed by signal %d", state, info->exit_signal);
        } else if (info->exit_code >= 0)
                snprintf(buf, size, "%s, exit code %d", state, info->exit_code);
        else
                snprintf(buf, size, "%s", state);
        /* Why it did not succeed, with the launch error when the caller may see it: the
         * first thing a user asks, and otherwise only `corral show` tells. */
        if (job_exit_status(info) != 0 && !isempty(info->reason)) {
                size_t l = strlen(buf);
                if (l + 1 < size)
                        snprintf(buf + l, size - l, " (%s)", info->reason);
        }
        return buf;
}

char *format_elapsed(char *buf, size_t size, uint64_t sec) {
        uint64_t d = sec / 86400;
        unsigned h = (unsigned) (sec % 86400 / 3600), m = (unsigned) (sec % 3600 / 60), s = (unsigned) (sec % 60);

        if (d > 0)
                snprintf(buf, size, "%" PRIu64 "-%02u:%02u:%02u", d, h, m, s);
        else if (h > 0)
                snprintf(buf, size, "%u:%02u:%02u", h, m, s);
        else
                snprintf(buf, size, "%u:%02u", m, s);
        return buf;
}

char *format_timestamp(char *buf, size_t size, uint64_t t) {
        time_t tt = (time_t) t;
        struct tm tm;

        if (t == 0 || t > CORRAL_TIME_MAX || !localtime_r(&tt, &tm) ||
            strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
                snprintf(buf, size, "n/a");
        return buf;
}

char *format_short_time(char *buf, size_t size, uint64_t t, time_t now) {
        time_t tt = (time_t) t;
        struct tm tm, tm_now;
        uint64_t distance = t > (uint64_t) now ? t - (uint64_t) now : (uint64_t) now - t;
        size_t n;

        if (t == 0 || t > CORRAL_TIME_MAX || !localtime_r(&tt, &tm) || !localtime_r(&now, &tm_now)) {
                snprintf(buf, size, "n/a");
                return buf;
        }
        /* Literal formats each, so -Wformat-nonliteral can check them. */
        if (tm.tm_year == tm_now.tm_year && tm.tm_yday == tm_now.tm_yday)
                n = strftime(buf, size, "%H:%M", &tm);
        else if (distance < 6 * 86400)
                n = strftime(buf, size, "%a %H:%M", &tm);
        else
                n = strftime(buf, size, "%Y-%m-%d", &tm);
        if (n == 0)
                snprintf(buf, size, "n/a");
        return buf;
}

char *format_start_estimate(char *buf, size_t size, uint64_t t, time_t now) {
        if (t <= (uint64_t) now) {
                snprintf(buf, size, "now");
                return buf;
        }
        return format_short_time(buf, size, t, now);
}

uint64_t job_elapsed(const JobInfo *info, time_t now) {
        uint64_t end;

        if (info->start_time == 0)
                return 0;
        end = info->end_time > 0 ? info->end_time : (uint64_t) MAX(now, (time_t) 0);
        return end > info->start_time ? end - info->start_time : 0;
}

int signal_from_string(const char *s) {
        unsigned n;

        if (isempty(s))
                return -EINVAL;
        if (isdigit((unsigned char) s[0]))
                return safe_atou(s, &n) >= 0 && n >= 1 && n < (unsigned) SIGRTMIN ? (int) n : -EINVAL;
        if (strncasecmp(s, "SIG", 3) == 0)
                s += 3;
        for (int sig = 1; sig < SIGRTMIN; sig++) {
                const char *a = sigabbrev_np(sig);
                if (a && strcasecmp(a, s) == 0)
                        return sig;
        }
        return -EINVAL;
}

const char *signal_to_string(int sig) {
        return sig > 0 ? sigabbrev_np(sig) : NULL;
}

char *output_path_expand(const char *pattern, const JobInfo *info) {
        return output_path_expand_step(pattern, info, -1, NULL);
}

char *output_path_expand_step(const char *pattern, const JobInfo *info, int task, const char *host) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f;

        f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        for (const char *p = pattern; *p; p++) {
                if (*p != '%' || !p[1]) {
                        fputc(*p, f);
                        continue;
                }
                switch (*++p) {
                case 'j':
                        fprintf(f, "%" PRIu64, info->id);
                        break;
                case 'x':
                        fputs(strempty(info->name), f);
                        break;
                case 'u':
                        fputs(strempty(info->user), f);
                        break;
                case 'A':
                        fprintf(f, "%" PRIu64, info->array_job_id ?: info->id);
                        break;
                case 'a':
                        fprintf(f, "%" PRIu32, info->array_task_id);
                        break;
                case '%':
                        fputc('%', f);
                        break;
                case 'J':
                case 's':
                case 't':
                case 'n':
                case 'N':
                        /* A step's: the one step, its task, the one node. */
                        if (task < 0) {
                                fputc('%', f);
                                fputc(*p, f);
                        } else if (*p == 'J')
                                fprintf(f, "%" PRIu64 ".0", info->id);
                        else if (*p == 't')
                                fprintf(f, "%d", task);
                        else if (*p == 'N')
                                fputs(strempty(host), f);
                        else
                                fputc('0', f);
                        break;
                default:
                        fputc('%', f);
                        fputc(*p, f);
                        break;
                }
        }
        if (fclose(f) != 0)
                return NULL;
        return TAKE_PTR(buf);
}

static bool word_needs_quotes(const char *w) {
        if (!*w)
                return true;
        for (const char *p = w; *p; p++)
                if (!isalnum((unsigned char) *p) && !strchr("_@%+=:,./-", *p))
                        return true;
        return false;
}

char *argv_to_display(char *const *argv) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f;

        f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        STRV_FOREACH(a, argv) {
                if (a != argv)
                        fputc(' ', f);
                if (!word_needs_quotes(*a)) {
                        fputs(*a, f);
                        continue;
                }
                fputc('\'', f);
                for (const char *p = *a; *p; p++)
                        if (*p == '\'')
                                fputs("'\\''", f);
                        else
                                fputc(*p, f);
                fputc('\'', f);
        }
        if (fclose(f) != 0)
                return NULL;
        return TAKE_PTR(buf);
}
