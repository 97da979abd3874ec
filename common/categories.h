/* categories.h — the Kineto event categories ("cat") faultline writes and reads.
 *
 * One spelling for the capture (which writes them) and the grader (which reads
 * them back and classifies events by them). torch.profiler's Kineto writes the
 * same strings; "Trace" is the profiler's own window span and "ac2g" the flow
 * events that link a host launch to its device event.
 */
#ifndef FL_CATEGORIES_H
#define FL_CATEGORIES_H

#define FL_CATEGORY_CPU_OP "cpu_op"
#define FL_CATEGORY_USER_ANNOTATION "user_annotation"
#define FL_CATEGORY_CUDA_RUNTIME "cuda_runtime"
#define FL_CATEGORY_CUDA_DRIVER "cuda_driver"
#define FL_CATEGORY_KERNEL "kernel"
#define FL_CATEGORY_GPU_MEMCPY "gpu_memcpy"
#define FL_CATEGORY_GPU_MEMSET "gpu_memset"
#define FL_CATEGORY_GPU_USER_ANNOTATION "gpu_user_annotation"
#define FL_CATEGORY_CUDA_SYNC "cuda_sync"
#define FL_CATEGORY_OVERHEAD "overhead"     /* time the capture itself took (CUPTI) */
#define FL_CATEGORY_AC2G "ac2g"             /* flow: host launch -> device event */
#define FL_CATEGORY_TRACE "Trace"           /* the profiler's recording window */

/* The name prefix of a step span (a user_annotation): ProfilerStep#N. */
#define FL_STEP_PREFIX "ProfilerStep#"
#define FL_STEP_PREFIX_LEN 13

#endif
