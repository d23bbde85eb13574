-- POST /v1/recover: a 503 from the tool `search`, for one of 1,000 tasks in turn (each task
-- sees a run of failures, as agents' tasks do).
local counter = 0
request = function()
  counter = counter + 1
  local body = string.format(
    '{"task": "task-%d", "report": {"http_status": 503}, "context": {"tool": "search"}}',
    counter % 1000)
  return wrk.format("POST", "/v1/recover", {["Content-Type"] = "application/json"}, body)
end
