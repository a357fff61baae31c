#include "kernels/profiler.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>

#include <sstream>
#include <stdexcept>

namespace flashsim::gpu {

namespace {

struct CuptiError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  std::ostringstream o;
  o << what << ": " << (s ? s : "unknown CUPTI error");
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    o << " (profiling not permitted: run as root or allow non-admin profiling, NVreg_RestrictProfilingToAdminUsers=0)";
  throw CuptiError(o.str());
}

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw CuptiError(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

const std::vector<const char*>& profiler_metric_names() {
  static const std::vector<const char*> names = {
      "dram__bytes_read.sum",
      "dram__bytes_write.sum",
      "gpu__time_duration.sum",
      "lts__t_sectors_srcunit_tex_op_read.sum",
      "lts__t_sectors_srcunit_tex_op_write.sum",
      "lts__t_sectors_srcunit_tex_op_red.sum",
  };
  return names;
}

HbmProfiler::~HbmProfiler() {
  if (host_) {
    CUpti_Profiler_Host_Deinitialize_Params p{};
    p.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
    p.pHostObject = static_cast<CUpti_Profiler_Host_Object*>(host_);
    cuptiProfilerHostDeinitialize(&p);
  }
}

bool HbmProfiler::init(std::string* why) {
  try {
    check_cuda(cudaFree(nullptr), "cudaFree(0)");  // make sure the primary context exists
    using GetCtx = CUresult (*)(CUcontext*);
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    check_cuda(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &q),
               "cudaGetDriverEntryPointByVersion(cuCtxGetCurrent)");
    if (!fn || q != cudaDriverEntryPointSuccess) throw CuptiError("cuCtxGetCurrent not found in the driver");
    CUcontext ctx = nullptr;
    if (reinterpret_cast<GetCtx>(fn)(&ctx) != CUDA_SUCCESS || !ctx) throw CuptiError("no current CUDA context");
    ctx_ = ctx;

    CUpti_Profiler_Initialize_Params ip{};
    ip.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
    check(cuptiProfilerInitialize(&ip), "cuptiProfilerInitialize");

    int dev = 0;
    check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
    CUpti_Device_GetChipName_Params cp{};
    cp.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
    cp.deviceIndex = static_cast<size_t>(dev);
    check(cuptiDeviceGetChipName(&cp), "cuptiDeviceGetChipName");
    const std::string chip = cp.pChipName;

    CUpti_Profiler_GetCounterAvailability_Params ap{};
    ap.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE;
    ap.ctx = ctx;
    check(cuptiProfilerGetCounterAvailability(&ap), "cuptiProfilerGetCounterAvailability(size)");
    std::vector<uint8_t> avail(ap.counterAvailabilityImageSize);
    ap.pCounterAvailabilityImage = avail.data();
    check(cuptiProfilerGetCounterAvailability(&ap), "cuptiProfilerGetCounterAvailability");

    CUpti_Profiler_Host_Initialize_Params hp{};
    hp.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
    hp.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    hp.pChipName = chip.c_str();
    hp.pCounterAvailabilityImage = avail.data();
    check(cuptiProfilerHostInitialize(&hp), "cuptiProfilerHostInitialize");
    host_ = hp.pHostObject;
    auto* host = static_cast<CUpti_Profiler_Host_Object*>(host_);

    auto names = profiler_metric_names();
    CUpti_Profiler_Host_ConfigAddMetrics_Params am{};
    am.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
    am.pHostObject = host;
    am.ppMetricNames = names.data();
    am.numMetrics = names.size();
    check(cuptiProfilerHostConfigAddMetrics(&am), "cuptiProfilerHostConfigAddMetrics");
    CUpti_Profiler_Host_GetConfigImageSize_Params sp{};
    sp.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
    sp.pHostObject = host;
    check(cuptiProfilerHostGetConfigImageSize(&sp), "cuptiProfilerHostGetConfigImageSize");
    config_.resize(sp.configImageSize);
    CUpti_Profiler_Host_GetConfigImage_Params gp{};
    gp.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
    gp.pHostObject = host;
    gp.configImageSize = config_.size();
    gp.pConfigImage = config_.data();
    check(cuptiProfilerHostGetConfigImage(&gp), "cuptiProfilerHostGetConfigImage");
    CUpti_Profiler_Host_GetNumOfPasses_Params np{};
    np.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
    np.configImageSize = config_.size();
    np.pConfigImage = config_.data();
    check(cuptiProfilerHostGetNumOfPasses(&np), "cuptiProfilerHostGetNumOfPasses");
    passes_ = np.numOfPasses;
    return true;
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return false;
  }
}

std::optional<RangeMetrics> HbmProfiler::measure(const std::string& name, const std::function<void()>& prepare,
                                                 const std::function<void()>& work, std::string* why) {
  if (!host_) {
    if (why) *why = "profiler not initialised";
    return std::nullopt;
  }
  CUpti_RangeProfiler_Object* obj = nullptr;
  try {
    auto names = profiler_metric_names();
    CUpti_RangeProfiler_Enable_Params ep{};
    ep.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE;
    ep.ctx = static_cast<CUcontext>(ctx_);
    check(cuptiRangeProfilerEnable(&ep), "cuptiRangeProfilerEnable");
    obj = ep.pRangeProfilerObject;

    CUpti_RangeProfiler_GetCounterDataSize_Params ds{};
    ds.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
    ds.pRangeProfilerObject = obj;
    ds.pMetricNames = names.data();
    ds.numMetrics = names.size();
    ds.maxNumOfRanges = 1;
    ds.maxNumRangeTreeNodes = 1;
    check(cuptiRangeProfilerGetCounterDataSize(&ds), "cuptiRangeProfilerGetCounterDataSize");
    std::vector<uint8_t> data(ds.counterDataSize);
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params ci{};
    ci.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE;
    ci.pRangeProfilerObject = obj;
    ci.counterDataSize = data.size();
    ci.pCounterData = data.data();
    check(cuptiRangeProfilerCounterDataImageInitialize(&ci), "cuptiRangeProfilerCounterDataImageInitialize");

    CUpti_RangeProfiler_SetConfig_Params sc{};
    sc.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
    sc.pRangeProfilerObject = obj;
    sc.configSize = config_.size();
    sc.pConfig = config_.data();
    sc.counterDataImageSize = data.size();
    sc.pCounterDataImage = data.data();
    sc.range = CUPTI_UserRange;
    sc.replayMode = CUPTI_UserReplay;
    sc.maxRangesPerPass = 1;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    check(cuptiRangeProfilerSetConfig(&sc), "cuptiRangeProfilerSetConfig");

    bool done = false;
    int guard = 0;
    while (!done) {
      if (++guard > 64) throw CuptiError("range profiler did not finish its passes");
      prepare();
      check_cuda(cudaDeviceSynchronize(), "prepare");
      CUpti_RangeProfiler_Start_Params st{};
    st.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE;
      st.pRangeProfilerObject = obj;
      check(cuptiRangeProfilerStart(&st), "cuptiRangeProfilerStart");
      CUpti_RangeProfiler_PushRange_Params pr{};
    pr.structSize = CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE;
      pr.pRangeProfilerObject = obj;
      pr.pRangeName = name.c_str();
      check(cuptiRangeProfilerPushRange(&pr), "cuptiRangeProfilerPushRange");
      work();
      check_cuda(cudaDeviceSynchronize(), "profiled work");
      CUpti_RangeProfiler_PopRange_Params pp{};
    pp.structSize = CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE;
      pp.pRangeProfilerObject = obj;
      check(cuptiRangeProfilerPopRange(&pp), "cuptiRangeProfilerPopRange");
      CUpti_RangeProfiler_Stop_Params sp{};
    sp.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
      sp.pRangeProfilerObject = obj;
      check(cuptiRangeProfilerStop(&sp), "cuptiRangeProfilerStop");
      done = sp.isAllPassSubmitted != 0;
    }
    CUpti_RangeProfiler_DecodeData_Params dd{};
    dd.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
    dd.pRangeProfilerObject = obj;
    check(cuptiRangeProfilerDecodeData(&dd), "cuptiRangeProfilerDecodeData");
    if (dd.numOfRangeDropped) throw CuptiError("the profiled range was dropped");

    CUpti_RangeProfiler_GetCounterDataInfo_Params gi{};
    gi.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
    gi.pCounterDataImage = data.data();
    gi.counterDataImageSize = data.size();
    check(cuptiRangeProfilerGetCounterDataInfo(&gi), "cuptiRangeProfilerGetCounterDataInfo");
    if (gi.numTotalRanges < 1) throw CuptiError("no range in the counter data");

    std::vector<double> values(names.size());
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev{};
    ev.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
    ev.pHostObject = static_cast<CUpti_Profiler_Host_Object*>(host_);
    ev.pCounterDataImage = data.data();
    ev.counterDataImageSize = data.size();
    ev.rangeIndex = 0;
    ev.ppMetricNames = names.data();
    ev.numMetrics = names.size();
    ev.pMetricValues = values.data();
    check(cuptiProfilerHostEvaluateToGpuValues(&ev), "cuptiProfilerHostEvaluateToGpuValues");

    CUpti_RangeProfiler_Disable_Params dp{};
    dp.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE;
    dp.pRangeProfilerObject = obj;
    check(cuptiRangeProfilerDisable(&dp), "cuptiRangeProfilerDisable");
    obj = nullptr;

    RangeMetrics m;
    m.dram_read_bytes = values[0];
    m.dram_write_bytes = values[1];
    m.gpu_time_ns = values[2];
    m.l2_read_sectors = values[3];
    m.l2_write_sectors = values[4];
    m.l2_red_sectors = values[5];
    return m;
  } catch (const std::exception& e) {
    if (obj) {
      CUpti_RangeProfiler_Disable_Params dp{};
    dp.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE;
      dp.pRangeProfilerObject = obj;
      cuptiRangeProfilerDisable(&dp);
    }
    if (why) *why = e.what();
    return std::nullopt;
  }
}

}  // namespace flashsim::gpu
