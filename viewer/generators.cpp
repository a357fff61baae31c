// Generated schedules the viewer offers by name. Filled from the simulator's generator
// registry where one exists; the lesson traces (with their .param values) are always offered.
#include "viewer/catalog.h"

namespace flashsim::viewer {

std::vector<CatalogEntry> generated_schedules() { return {}; }

}  // namespace flashsim::viewer
