/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdarg.h>
#include <syslog.h>

#include "macro.h"

/* Logging for programs (corrald, corral, the supervisor). Library layers (sched/, cgroup/,
 * proto/, executor/) log at debug level at most and return -errno; the caller logs once.
 *
 * Under systemd (JOURNAL_STREAM names our stderr) messages go to the journal with
 * structured fields; otherwise to stderr as "ident: message". */

typedef enum LogTarget {
        LOG_TARGET_AUTO,
        LOG_TARGET_STDERR,
        LOG_TARGET_JOURNAL,
} LogTarget;

void log_setup(const char *ident, LogTarget target);
void log_set_max_level(int level);
int log_get_max_level(void) _pure_;
/* Parses "debug", "info", "warning", "err", ... or a number 0-7. */
int log_level_from_string(const char *s);
/* Applies $CORRAL_LOG_LEVEL when set; returns -EINVAL for an unknown level. */
int log_parse_environment(void);

int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *format, ...) _printf_(6, 7);

/* Evaluates to -abs(error) (or 0 for error == 0), so `return log_error_errno(r, ...)`
 * logs and propagates in one go. %m prints the error's text. */
#define log_full_errno(level, error, ...)                                                  \
        ({                                                                                 \
                int _level_ = (level), _e_ = (error);                                      \
                _e_ = _e_ < 0 ? -_e_ : _e_;                                                \
                log_get_max_level() >= _level_                                             \
                        ? log_internal(_level_, _e_, __FILE__, __LINE__, __func__, __VA_ARGS__) \
                        : -_e_;                                                            \
        })
#define log_full(level, ...) ((void) log_full_errno((level), 0, __VA_ARGS__))

#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, (e), __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_INFO, (e), __VA_ARGS__)
#define log_notice_errno(e, ...) log_full_errno(LOG_NOTICE, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, (e), __VA_ARGS__)

#define log_oom() log_error_errno(ENOMEM, "Out of memory.")
