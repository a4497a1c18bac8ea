/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

#include "macro.h"

/* Strict number parsers: the whole string must be a number, no leading space or sign
 * surprises, range-checked. Return 0 or -EINVAL / -ERANGE. */
int safe_atou(const char *s, unsigned *ret);
int safe_atoi(const char *s, int *ret);
int safe_atou64(const char *s, uint64_t *ret);
int safe_atoi64(const char *s, int64_t *ret);

/* "yes/no/true/false/on/off/1/0": 1 or 0, else -EINVAL. */
int parse_boolean(const char *s);

/* A size such as "4G", "512M", "1.5GiB", "100" or "8KB". Suffixes K M G T P E are binary
 * (1024-based) as in Slurm and systemd; a trailing "B" or "iB" is allowed; "B" alone means
 * bytes. A bare number is multiplied by default_unit (Slurm's --mem takes megabytes). */
int parse_size(const char *s, uint64_t default_unit, uint64_t *ret);

/* How a bare number and "a:b" read in a duration. */
typedef enum DurationDialect {
        DURATION_SLURM, /* "M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S" */
        DURATION_PBS,   /* "S", "M:S", "H:M:S" (walltime) */
} DurationDialect;

#define DURATION_INFINITY UINT64_MAX

/* A duration in seconds: the dialect's clock forms, or unit words such as "90s",
 * "30min", "2h", "1d12h", "1w"; "infinity"/"unlimited" give DURATION_INFINITY. */
int parse_duration(const char *s, DurationDialect dialect, uint64_t *ret_sec);

/* Formats seconds as Slurm does: "[D-]HH:MM:SS", or "UNLIMITED". buf >= 32 bytes. */
char *format_duration(char *buf, size_t size, uint64_t sec);

/* Formats bytes with a binary suffix ("1.5G", "512M", "100B"). buf >= 16 bytes. */
char *format_size(char *buf, size_t size, uint64_t bytes);
