/* device_opts.c: the device options every model-running command shares
 * (device.h), and the routing-profile helpers that work on either device. */
#include "runtime/device/device.h"

#include "runtime/kernels/kernels.h"

#include <stdio.h>
#include <string.h>

void device_opts_default(device_opts *o)
{
    memset(o, 0, sizeof *o);
    o->kind = DEVICE_AUTO;
    o->vram_reserve = (uint64_t)512 << 20;
    o->miss = EC_MISS_PCIE;
}

int device_parse_kind(const char *s, device_kind *out)
{
    if (!s) return -1;
    if (!strcmp(s, "auto")) *out = DEVICE_AUTO;
    else if (!strcmp(s, "cpu")) *out = DEVICE_CPU;
    else if (!strcmp(s, "cuda")) *out = DEVICE_CUDA;
    else return -1;
    return 0;
}

const char *device_kind_name(device_kind k)
{
    return k == DEVICE_CPU ? "cpu" : k == DEVICE_CUDA ? "cuda" : "auto";
}

int device_parse_arg(device_opts *o, const char *opt, const char *val, char *err, size_t errlen)
{
    if (!strcmp(opt, "--device")) {
        if (device_parse_kind(val, &o->kind)) {
            snprintf(err, errlen, "--device takes auto, cpu or cuda, not '%s'", val ? val : "");
            return -1;
        }
        o->kind_given = true;
        return 1;
    }
    if (!strcmp(opt, "--mem")) {
        if (!val || ec_parse_size(val, &o->mem) || o->mem == 0) {
            snprintf(err, errlen, "--mem takes a size like 800M or 24G, not '%s'", val ? val : "");
            return -1;
        }
        o->mem_given = true;
        return 1;
    }
    if (!strcmp(opt, "--vram-reserve")) {
        if (!val || ec_parse_size(val, &o->vram_reserve)) {
            snprintf(err, errlen, "--vram-reserve takes a size like 512M or 2G, not '%s'", val ? val : "");
            return -1;
        }
        return 1;
    }
    if (!strcmp(opt, "--miss")) {
        int m = val ? ec_miss_parse(val) : -1;
        if (m < 0) {
            snprintf(err, errlen, "--miss takes cpu, pcie or auto, not '%s'", val ? val : "");
            return -1;
        }
        o->miss = (ec_miss_mode)m;
        return 1;
    }
    if (!strcmp(opt, "--cpu-kernels")) {
        if (!(o->cpu_kernels = kernels_named(val))) {
            char names[256];
            kernels_names(names, sizeof names);
            snprintf(err, errlen, "--cpu-kernels: '%s' is not a kernel table this CPU runs (it runs: %s)",
                     val ? val : "", names);
            return -1;
        }
        return 1;
    }
    if (!strcmp(opt, "--profile") || !strcmp(opt, "--record-routing")) {
        if (!val || !*val) {
            snprintf(err, errlen, "%s needs a file name", opt);
            return -1;
        }
        if (opt[2] == 'p') o->profile = val;
        else o->record = val;
        return 1;
    }
    return 0;
}

const kernels *device_cpu_kernels(const device_opts *o)
{
    return o && o->cpu_kernels ? o->cpu_kernels : kernels_get(1);
}

bool device_split_codes(const device_opts *o)
{
    return !device_cuda_built() && device_cpu_kernels(o)->reads_split;
}

int device_profile_add(ec_profile *dst, const ec_profile *src, char *err, size_t errlen)
{
    if (dst->n_layer != src->n_layer || dst->n_expert != src->n_expert || dst->n_used != src->n_used) {
        snprintf(err, errlen, "routing profiles of different shapes cannot be added");
        return -1;
    }
    dst->tokens += src->tokens;
    for (size_t i = 0; i < (size_t)src->n_layer * (size_t)src->n_expert; i++) dst->count[i] += src->count[i];
    return 0;
}
