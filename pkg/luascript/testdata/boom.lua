-- pkg/luascript/testdata/boom.lua: fails, at its line 9 or inside
-- window.lua, for TestLineNumbers; composed after window.lua.
--
-- KEYS: 1 a window's key.
-- ARGV: 1 'lib' (window_limit given no key: an error in window.lua) or
-- 'own' (an error here).
if ARGV[1] == 'lib' then return window_limit(nil, 1, 1000, 0) end
local t = nil
return t.boom
