/// Lua scripts for wrk. Each prints one JSON line in `done`, which ``Wrk`` parses.
enum WrkScripts {
    /// The run's summary. `signed` sums the threads' count of signed responses (zero when the
    /// script does not look at responses).
    static let report = """
    done = function(summary, latency, requests)
      local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
      local signed = 0
      for _, thread in ipairs(all_threads) do signed = signed + (thread:get("signed") or 0) end
      io.write(string.format('{"requests":%d,"duration_us":%d,"errors":%d,"non2xx":%d,"p50_us":%d,"p99_us":%d,"signed":%d}\\n',
        summary.requests, summary.duration, errors, summary.errors.status, latency:percentile(50), latency:percentile(99), signed))
    end
    """

    /// Numbers each thread and seeds its random numbers from the run and the thread (LuaJIT
    /// starts every thread on the same sequence, so unseeded threads send the same requests).
    /// The last argument is the run's tag, which ``Wrk`` appends. When the global `targets`
    /// lists ports, threads are spread over them in turn (one wrk for several server processes,
    /// so its latency histogram covers all of them).
    static let threads = """
    all_threads = {}
    local started = 0
    setup = function(thread)
      started = started + 1
      thread:set("tid", started)
      table.insert(all_threads, thread)
      if targets ~= nil then
        thread.addr = wrk.lookup("127.0.0.1", tostring(targets[(started - 1) % #targets + 1]))[1]
      end
    end
    local function seed(args)
      local tag = args[#args]
      local n = 0
      for i = 1, #tag do n = (n * 31 + tag:byte(i)) % 2147483647 end
      math.randomseed(n + tid * 7919)
      return tag .. "-" .. tid
    end
    """

    static let healthz = threads + "\n" + report

    /// Cycles through `<license key> <instance id>` lines; args: file, SDK key, nonce (empty:
    /// unsigned), sample file prefix (empty: none).
    static let validate = threads + "\n" + """
    local entries = {}
    local index = 0
    init = function(args)
      for line in io.lines(args[1]) do
        local key, instance = line:match("(%S+) (%S+)")
        table.insert(entries, '{"license_key":"' .. key .. '","instance_id":"' .. instance .. '"}')
      end
      seed(args)
      index = math.random(#entries)
      wrk.headers["X-Keylight-SDK-Key"] = args[2]
      wrk.headers["Content-Type"] = "application/json"
      if args[3] ~= nil and args[3] ~= "" then wrk.headers["X-Keylight-Nonce"] = args[3] end
      if args[4] ~= nil and args[4] ~= "" then sample_prefix = args[4] end
    end
    request = function()
      index = index % #entries + 1
      return wrk.format("POST", nil, nil, entries[index])
    end
    """ + "\n" + report

    /// `validate` with the telemetry the hosted C# client sends on every call (protocol 6.8), so
    /// its cost (read, cut, carried to the activity buffer) is measured against the plain body.
    static let telemetryValidate = threads + "\n" + """
    local entries = {}
    local index = 0
    init = function(args)
      for line in io.lines(args[1]) do
        local key, instance = line:match("(%S+) (%S+)")
        table.insert(entries, '{"license_key":"' .. key .. '","instance_id":"' .. instance .. '","app_version":"2.1.0","sdk_version":"0.5.0",' ..
          '"platform":"windows","sdk":"csharp","cpu_cores":"5-8","memory":"16-32GB","os_version":"10.0.22631","arch":"x86_64","sdk_trial_duration_days":14}')
      end
      seed(args)
      index = math.random(#entries)
      wrk.headers["X-Keylight-SDK-Key"] = args[2]
      wrk.headers["Content-Type"] = "application/json; charset=utf-8"
    end
    request = function()
      index = index % #entries + 1
      return wrk.format("POST", nil, nil, entries[index])
    end
    """ + "\n" + report

    /// `validate` at a set pace: each connection waits `args[5]` milliseconds between requests,
    /// so the offered rate is connections x 1000 / pace, whatever the server could take.
    static let pacedValidate = validate + "\n" + """
    local pace = 0
    local base_init = init
    init = function(args)
      base_init(args)
      pace = tonumber(args[5]) or 0
    end
    delay = function() return pace end
    """

    /// `validate` that also looks at every response: counts those carrying a signature of the
    /// protocol's length (240 base64 characters) and writes each thread's first three signed
    /// responses to `<sample prefix>-<thread>.txt` (`status signature kid time length`, then the
    /// body), which ``SignatureSamples`` verifies. Both legs of the signed/unsigned comparison run
    /// it, so both pay wrk's cost of handing responses to Lua.
    static let checkedValidate = validate + "\n" + """
    signed = 0
    local samples = 0
    response = function(status, headers, body)
      local signature, kid, time
      for name, value in pairs(headers) do
        local lower = string.lower(name)
        if lower == "x-keylight-signature" then signature = value
        elseif lower == "x-keylight-signature-kid" then kid = value
        elseif lower == "x-keylight-request-time" then time = value end
      end
      if signature == nil or #signature ~= 240 then return end
      signed = signed + 1
      if sample_prefix ~= nil and samples < 3 then
        samples = samples + 1
        local file = io.open(sample_prefix .. "-" .. tid .. ".txt", "a")
        file:write(status, " ", signature, " ", kid or "-", " ", time or "-", " ", #body, "\\n", body, "\\n")
        file:close()
      end
    end
    """

    /// Activates a fresh machine on each request, cycling through license keys; args: file, SDK key.
    static let activate = threads + "\n" + """
    local keys = {}
    local index = 0
    local counter = 0
    local thread_tag = ""
    init = function(args)
      for line in io.lines(args[1]) do
        local key = line:match("(%S+)")
        table.insert(keys, key)
      end
      thread_tag = seed(args)
      index = math.random(#keys)
      wrk.headers["X-Keylight-SDK-Key"] = args[2]
      wrk.headers["Content-Type"] = "application/json"
    end
    request = function()
      index = index % #keys + 1
      counter = counter + 1
      return wrk.format("POST", nil, nil,
        '{"license_key":"' .. keys[index] .. '","instance_name":"bench","machine_hash":"' .. thread_tag .. '-' .. counter .. '"}')
    end
    """ + "\n" + report

    /// `script` with its threads spread over server processes listening on `ports`.
    static func spread(_ script: String, over ports: [Int]) -> String {
        "targets = {" + ports.map(String.init).joined(separator: ", ") + "}\n" + script
    }
}
