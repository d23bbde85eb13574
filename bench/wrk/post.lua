-- POST the same JSON body to the path given as the script's argument: classify and the echo.
local path, body
function init(args)
  path = args[1]
  body = args[2]
end

request = function()
  return wrk.format("POST", path, {["Content-Type"] = "application/json"}, body)
end
