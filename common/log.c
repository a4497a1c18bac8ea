/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal-send.h"
#include "log.h"
#include "parse-util.h"
#include "string-table.h"

static const char *log_ident = "corral";
static LogTarget log_target = LOG_TARGET_STDERR;
static int log_max_level = LOG_INFO;

static const char *const log_level_table[] = {
        [LOG_EMERG] = "emerg",     [LOG_ALERT] = "alert", [LOG_CRIT] = "crit",
        [LOG_ERR] = "err",         [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
        [LOG_INFO] = "info",       [LOG_DEBUG] = "debug",
};

/* True when stderr is the journal stream systemd connected us to (see systemd.exec(5),
 * $JOURNAL_STREAM), so that structured journal messages land in the same unit. */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

void log_setup(const char *ident, LogTarget target) {
        if (ident)
                log_ident = ident;
        if (target == LOG_TARGET_AUTO)
                target = stderr_is_journal() ? LOG_TARGET_JOURNAL : LOG_TARGET_STDERR;
        log_target = target;
}

void log_set_max_level(int level) {
        log_max_level = CLAMP(level, LOG_EMERG, LOG_DEBUG);
}

int log_get_max_level(void) {
        return log_max_level;
}

int log_level_from_string(const char *s) {
        unsigned u;
        int l;

        if (!s)
                return -EINVAL;
        if (streq(s, "error"))
                return LOG_ERR;
        if (streq(s, "warn"))
                return LOG_WARNING;
        l = (int) string_table_lookup(log_level_table, ELEMENTSOF(log_level_table), s);
        if (l >= 0)
                return l;
        if (safe_atou(s, &u) >= 0 && u <= LOG_DEBUG)
                return (int) u;
        return -EINVAL;
}

int log_parse_environment(void) {
        const char *e = getenv("CORRAL_LOG_LEVEL");
        int l;

        if (!e)
                return 0;
        l = log_level_from_string(e);
        if (l < 0)
                return l;
        log_set_max_level(l);
        return 0;
}

int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *format, ...) {
        char buf[2048];
        va_list ap;
        int saved = errno;

        /* %m refers to the error we were handed, not whatever errno happens to be. */
        errno = error;
        va_start(ap, format);
        (void) vsnprintf(buf, sizeof buf, format, ap);
        va_end(ap);

        if (log_target == LOG_TARGET_JOURNAL) {
                char lbuf[16], pbuf[16], ebuf[16];
                (void) snprintf(lbuf, sizeof lbuf, "%d", line);
                (void) snprintf(pbuf, sizeof pbuf, "%d", level);
                (void) snprintf(ebuf, sizeof ebuf, "%d", error);
                JournalField f[] = {
                        { "MESSAGE", buf, SIZE_MAX },      { "PRIORITY", pbuf, SIZE_MAX },
                        { "CODE_FILE", file, SIZE_MAX },   { "CODE_LINE", lbuf, SIZE_MAX },
                        { "CODE_FUNC", func, SIZE_MAX },   { "SYSLOG_IDENTIFIER", log_ident, SIZE_MAX },
                        { "ERRNO", ebuf, SIZE_MAX },
                };
                (void) journal_send(f, ELEMENTSOF(f) - (error == 0));
        } else
                (void) fprintf(stderr, "%s: %s\n", log_ident, buf);

        errno = saved;
        return -error;
}
