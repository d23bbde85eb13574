-- One counted attempt per request: every request has its own case and execution id, so none
-- is a replay. Threads number themselves in setup().
local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end

local n = 0
request = function()
  n = n + 1
  local id = tid .. "-" .. n
  local body = '{"execution_id":"run-' .. id .. '","case":{"id":"vendor-' .. id .. '.example.com"},'
    .. '"questions":{"data_access":{"excerpts":[{"source":"dpa.pdf","locator":"§4.2",'
    .. '"text":"The vendor does not process any customer data."}]},'
    .. '"subprocessors":{"excerpts":[{"source":"dpa.pdf","locator":"annex B",'
    .. '"text":"The vendor uses no subprocessors."}]}},'
    .. '"related":{"counterparty":{"id":"acct-' .. id .. '"}},"confidence":0.9}'
  return wrk.format("POST", "/v1/jobs/vendor-risk/decisions",
    {["Content-Type"] = "application/json"}, body)
end

response = function(status, headers, body)
  if status ~= 200 then
    io.stderr:write("unexpected status " .. status .. ": " .. body .. "\n")
  end
end
