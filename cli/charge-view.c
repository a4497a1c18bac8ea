/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A job's charge as Show and List --long give it: decoded from the reply, and printed as
 * `corral show`'s charge lines. `corral usage` reads its rows with the same field getters. */

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "commands.h"
#include "json-util.h"
#include "parse-util.h"

const char *const charge_stall_names[_CHARGE_STALL_MAX] = { "cpu_some", "cpu_full", "memory_some", "memory_full", "io_some", "io_full" };

double json_field_num(json_object *o, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) ||
            (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)))
                return 0;
        return json_object_get_double(v);
}

uint64_t json_field_unum(json_object *o, const char *key) {
        json_object *v;
        int64_t i;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return 0;
        i = json_object_get_int64(v);
        return i > 0 ? (uint64_t) i : 0;
}

/* ---- corral show's charge ---- */

void charge_view_from_json(json_object *o, ChargeView *ret) {
        json_object *st, *v;

        *ret = (ChargeView) {};
        if (!json_object_is_type(o, json_type_object))
                return;
        *ret = (ChargeView) {
                .set = true,
                .cpus = (unsigned) json_field_unum(o, "cpus"),
                .gpus = (unsigned) json_field_unum(o, "gpus"),
                .gpu_hours = json_field_num(o, "gpu_hours"),
                .charge_per_gpu_hour = json_field_num(o, "charge_per_gpu_hour"),
                .run_usec = json_field_unum(o, "run_usec"),
                .cpu_usec = json_field_unum(o, "cpu_usec"),
                .memory_peak = json_field_unum(o, "memory_peak"),
                .io_read_bytes = json_field_unum(o, "io_read_bytes"),
                .io_write_bytes = json_field_unum(o, "io_write_bytes"),
                .io_read_ops = json_field_unum(o, "io_read_ops"),
                .io_write_ops = json_field_unum(o, "io_write_ops"),
                .core_hours = json_field_num(o, "core_hours"),
                .charge_factor = json_field_num(o, "charge_factor"),
                .service_units = json_field_num(o, "service_units"),
                .efficiency = json_field_num(o, "efficiency"),
        };
        if (json_object_object_get_ex(o, "live", &v) && json_object_is_type(v, json_type_boolean))
                ret->live = json_object_get_boolean(v);
        if (json_object_object_get_ex(o, "stall_usec", &st) && json_object_is_type(st, json_type_object)) {
                ret->has_pressure = true;
                for (size_t i = 0; i < ELEMENTSOF(charge_stall_names); i++)
                        ret->stall_usec[i] = json_field_unum(st, charge_stall_names[i]);
        }
}

static void line(FILE *f, const char *key, const char *fmt, ...) _printf_(3, 4);
static void line(FILE *f, const char *key, const char *fmt, ...) {
        va_list ap;

        fprintf(f, "%14s: ", key);
        va_start(ap, fmt);
        vfprintf(f, fmt, ap);
        va_end(ap);
        fputc('\n', f);
}

static char *format_seconds(char *buf, size_t size, uint64_t usec) {
        if (usec < 60 * UINT64_C(1000000))
                snprintf(buf, size, "%.1fs", (double) usec / 1e6);
        else
                format_elapsed(buf, size, usec / 1000000);
        return buf;
}

void charge_view_print(FILE *f, const ChargeView *c) {
        char a[64], b[64], d[64], e[64], g[64];

        if (c->gpus > 0) {
                line(f, "Charge", "%.4g service units%s = (%.4g core-hours + %.4g GPU-hours x %g) x %g "
                     "(%u CPUs and %u GPUs x %s)", c->service_units, c->live ? " so far" : "", c->core_hours,
                     c->gpu_hours, c->charge_per_gpu_hour, c->charge_factor, c->cpus, c->gpus,
                     format_seconds(a, sizeof a, c->run_usec));
                /* No vendor library is read: what the GPUs did is not known. */
                line(f, "GPUUtilization", "not recorded");
        } else
                line(f, "Charge", "%.4g service units%s = %.4g core-hours x %g (%u CPUs x %s)", c->service_units,
                     c->live ? " so far" : "", c->core_hours, c->charge_factor, c->cpus,
                     format_seconds(a, sizeof a, c->run_usec));
        line(f, "CPUTime", "%s (efficiency %.1f%% of the CPUs' time)", format_seconds(a, sizeof a, c->cpu_usec),
             100.0 * c->efficiency);
        line(f, "MemoryPeak", "%s", format_size(a, sizeof a, c->memory_peak));
        line(f, "IO", "%s read, %s written (%" PRIu64 " and %" PRIu64 " operations)",
             format_size(a, sizeof a, c->io_read_bytes), format_size(b, sizeof b, c->io_write_bytes), c->io_read_ops,
             c->io_write_ops);
        if (c->has_pressure)
                /* PSI: "some" is time at least one task stalled, "full" all of them. */
                line(f, "Stalled", "cpu %s, memory %s (all tasks %s), io %s (all tasks %s)",
                     format_seconds(a, sizeof a, c->stall_usec[0]), format_seconds(b, sizeof b, c->stall_usec[2]),
                     format_seconds(d, sizeof d, c->stall_usec[3]), format_seconds(e, sizeof e, c->stall_usec[4]),
                     format_seconds(g, sizeof g, c->stall_usec[5]));
}
