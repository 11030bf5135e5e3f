#ifndef __VMLINUX_TYPES_H__
#define __VMLINUX_TYPES_H__

typedef __u8 u8;
typedef __s16 s16;
typedef __u16 u16;
typedef __s32 s32;
typedef __u32 u32;
typedef __s64 s64;
typedef __u64 u64;

typedef s64 ktime_t;

typedef __s64 time64_t;

struct timespec64 {
        time64_t tv_sec;
        long int tv_nsec;
};

#endif /* __VMLINUX_TYPES_H__ */
