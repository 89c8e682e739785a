/* A stand-in for libnvidia-ml.so.1 (there is no GPU here): the NVML C functions profopt's
 * telemetry calls through the real pynvml binding, each answering from a state file the test (and
 * the test's step) writes, so profopt's own code path and NVIDIA's binding both run as on a device.
 *
 * FAKE_NVML_STATE names the state file: lines `key value`, read afresh at every call. Keys: sm, mem
 * (MHz), power_mw, temp, reasons (a clocks-event mask), energy_dir (the energy counter is the sum
 * of the integers in the files named e-* there: each worker's step adds its own), name, driver,
 * cuda_driver (12040), uuid, persistence, ecc, mig, app_sm, app_sm_default, init_fail. A value NA
 * answers NVML_ERROR_NOT_SUPPORTED. Built by tests/test_gpu.py with gcc -shared -fPIC. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
enum { OK = 0, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, NOT_FOUND = 6, DRIVER_NOT_LOADED = 9 };
static int device_token = 1;

/* The value of `key` in the state file into buf; 1 found, 0 absent, -1 NA. */
static int lookup(const char *key, char *buf, size_t len) {
    const char *path = getenv("FAKE_NVML_STATE");
    char line[1024];
    int found = 0;
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f) return 0;
    while (fgets(line, sizeof line, f)) {
        size_t k = strlen(key);
        if (strncmp(line, key, k) == 0 && line[k] == ' ') {
            char *v = line + k + 1;
            v[strcspn(v, "\n")] = 0;
            snprintf(buf, len, "%s", v);
            found = strcmp(v, "NA") == 0 ? -1 : 1;
        }
    }
    fclose(f);
    return found;
}

static nvmlReturn_t number(const char *key, long long dflt, long long *out) {
    char buf[256];
    int got = lookup(key, buf, sizeof buf);
    if (got < 0) return NOT_SUPPORTED;
    *out = got ? strtoll(buf, NULL, 0) : dflt;
    return OK;
}

static nvmlReturn_t text(const char *key, const char *dflt, char *out, unsigned len) {
    char buf[256];
    int got = lookup(key, buf, sizeof buf);
    if (got < 0) return NOT_SUPPORTED;
    snprintf(out, len, "%s", got ? buf : dflt);
    return OK;
}

#define UINT_FROM(key, dflt, ptr) do { long long v; nvmlReturn_t r = number(key, dflt, &v); \
    if (r) return r; *(ptr) = (unsigned)v; return OK; } while (0)

const char *nvmlErrorString(nvmlReturn_t r) { (void)r; return "stand-in NVML error"; }

nvmlReturn_t nvmlInitWithFlags(unsigned flags) {
    long long fail = 0;
    (void)flags;
    number("init_fail", 0, &fail);
    return fail ? DRIVER_NOT_LOADED : OK;
}
nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
nvmlReturn_t nvmlShutdown(void) { return OK; }

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count) { *count = 1; return OK; }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *device) {
    if (index != 0) return INVALID_ARGUMENT;
    *device = &device_token;
    return OK;
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
    char mine[96];
    text("uuid", "GPU-standin-0", mine, sizeof mine);
    if (strcmp(uuid, mine) != 0) return NOT_FOUND;
    *device = &device_token;
    return OK;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *out, unsigned len) {
    (void)d;
    return text("uuid", "GPU-standin-0", out, len);
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *out, unsigned len) {
    (void)d;
    return text("name", "Stand-in GPU", out, len);
}
nvmlReturn_t nvmlSystemGetDriverVersion(char *out, unsigned len) { return text("driver", "550.54.15", out, len); }
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) {
    long long got;
    nvmlReturn_t r = number("cuda_driver", 12040, &got);
    if (r) return r;
    *v = (int)got;
    return OK;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned *mhz) {
    (void)d;
    if (type == 2) UINT_FROM("mem", 1215, mhz);
    UINT_FROM("sm", 1410, mhz);
}
nvmlReturn_t nvmlDeviceGetClock(nvmlDevice_t d, int type, int id, unsigned *mhz) {
    (void)d; (void)type;
    if (id == 1) UINT_FROM("app_sm", 1410, mhz);
    if (id == 2) UINT_FROM("app_sm_default", 1410, mhz);
    return NOT_SUPPORTED;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned *mw) { (void)d; UINT_FROM("power_mw", 250000, mw); }
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned *c) {
    (void)d; (void)sensor;
    UINT_FROM("temp", 60, c);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *mask) {
    long long v;
    nvmlReturn_t r = number("reasons", 0, &v);
    (void)d;
    if (r) return r;
    *mask = (unsigned long long)v;
    return OK;
}
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *mask) {
    return nvmlDeviceGetCurrentClocksEventReasons(d, mask);
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj) {
    char dir[512], path[1024], buf[64];
    unsigned long long total = 0;
    struct dirent *e;
    DIR *dp;
    int got = lookup("energy_dir", dir, sizeof dir);
    (void)d;
    if (got < 0) return NOT_SUPPORTED;
    if (!got || !(dp = opendir(dir))) { *mj = 0; return OK; }
    while ((e = readdir(dp))) {
        FILE *f;
        if (strncmp(e->d_name, "e-", 2) != 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if ((f = fopen(path, "r"))) {
            if (fgets(buf, sizeof buf, f)) total += strtoull(buf, NULL, 10);
            fclose(f);
        }
    }
    closedir(dp);
    *mj = total;
    return OK;
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, int *state) { (void)d; UINT_FROM("persistence", 1, state); }
nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, int *current, int *pending) {
    long long v;
    nvmlReturn_t r = number("ecc", 1, &v);
    (void)d;
    if (r) return r;
    *current = *pending = (int)v;
    return OK;
}
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned *current, unsigned *pending) {
    long long v;
    nvmlReturn_t r = number("mig", 0, &v);
    (void)d;
    if (r) return r;
    *current = *pending = (unsigned)v;
    return OK;
}
